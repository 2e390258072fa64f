//go:build !cgo

package daemon

import (
	"errors"
	"io"
	"log/slog"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// openvinoBuilt says this binary carries the OpenVINO GenAI engine: a
// build without cgo cannot load a C library.
const openvinoBuilt = false

var errNoOpenVINO = errors.New("this npud was built without cgo (CGO_ENABLED=0), so it cannot load OpenVINO GenAI: it has the simulated engine only")

func newOpenVINOEngine(Config, *slog.Logger) (npu.Engine, error) { return nil, errNoOpenVINO }

func autoEngine(Config, *slog.Logger) (npu.Engine, string, error) {
	return nil, errNoOpenVINO.Error(), nil
}

func printDevices(Config, io.Writer) error { return errNoOpenVINO }

// examineLibrary: a build without cgo cannot load OpenVINO GenAI.
func examineLibrary(_ Config, _ func(string) string, r *doctorReport) bool {
	r.add("openvino library", checkFail, errNoOpenVINO.Error(), "use a build with cgo (the packages' binary, or make build)")
	return false
}

func openvinoLimits(Config) modelstore.Limits { return modelstore.FixedContext(0) }

func openvinoWorkerEngine(Config, func(model, device string), *slog.Logger) (npu.Engine, error) {
	return nil, errNoOpenVINO
}

func findLibrary(Config) (string, error) { return "", errNoOpenVINO }
