package e2e

import (
	"os"
	"testing"

	"github.com/npud/npud/daemon/daemontest"
)

// TestMain lets this test binary serve as the engine worker the daemons
// under test start (os.Executable is the test binary).
func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	os.Exit(m.Run())
}
