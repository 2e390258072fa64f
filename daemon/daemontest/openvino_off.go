//go:build !(openvino && cgo && ovtest)

package daemontest

import (
	"testing"

	"github.com/npud/npud/daemon"
)

// EngineUnderTest is "sim": this build has no OpenVINO test engine.
func EngineUnderTest() string { return "sim" }

// StartOpenVINO is not available in this build.
func StartOpenVINO(t testing.TB, _ func(*daemon.Config)) *Server {
	t.Helper()
	t.Fatal("StartOpenVINO needs the openvino, cgo and ovtest build tags")
	return nil
}
