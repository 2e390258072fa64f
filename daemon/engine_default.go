//go:build !cgo

package daemon

import (
	"errors"
	"log/slog"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// OpenVINOBuilt says this binary carries the OpenVINO GenAI engine: a
// build without cgo cannot load a C library.
const OpenVINOBuilt = false

var ErrNoOpenVINO = errors.New("this npud was built without cgo (CGO_ENABLED=0), so it cannot load OpenVINO GenAI: it has the simulated engine only")

func newOpenVINOEngine(Config, *slog.Logger) (npu.Engine, error) { return nil, ErrNoOpenVINO }

func autoEngine(Config, *slog.Logger) (npu.Engine, string, error) {
	return nil, ErrNoOpenVINO.Error(), nil
}

func openvinoLimits(Config) modelstore.Limits { return modelstore.FixedContext(0) }

func openvinoWorkerEngine(Config, func(model, device string), *slog.Logger) (npu.Engine, error) {
	return nil, ErrNoOpenVINO
}

func findLibrary(Config) (string, error) { return "", ErrNoOpenVINO }

// tokenizersEnv: a build without cgo runs no OpenVINO worker.
func tokenizersEnv(string) []string { return nil }
