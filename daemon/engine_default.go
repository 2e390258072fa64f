//go:build !(openvino && cgo)

package daemon

import (
	"errors"
	"io"
	"log/slog"

	"github.com/npud/npud/npu"
)

// openvinoBuilt says this binary has the OpenVINO GenAI engine.
const openvinoBuilt = false

var errNoOpenVINO = errors.New("this npud was built without the OpenVINO GenAI engine (make build-openvino)")

func newOpenVINOEngine(Config, *slog.Logger) (npu.Engine, error) { return nil, errNoOpenVINO }

func printDevices(io.Writer) error { return errNoOpenVINO }

func deviceNames() map[string]string { return nil }
