//go:build !cgo

package cli

import (
	"io"

	"github.com/npud/npud/daemon"
)

func printDevices(daemon.Config, io.Writer) error { return daemon.ErrNoOpenVINO }

// doctorProbeInChild: without cgo nothing native runs, so no child is needed.
const doctorProbeInChild = false

// examineLibrary: a build without cgo cannot load OpenVINO GenAI.
func examineLibrary(_ daemon.Config, _ func(string) string, r *doctorReport) bool {
	r.add("openvino library", checkFail, daemon.ErrNoOpenVINO.Error(), "use a build with cgo (the packages' binary, or make build)")
	return false
}
