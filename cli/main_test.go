package cli

import (
	"os"
	"testing"
)

// TestMain serves as doctor's probe when doctor, run by a test, started
// this test binary as one (os.Executable is the test binary).
func TestMain(m *testing.M) {
	if IsDoctorProbe() {
		os.Exit(RunDoctorProbe(os.Stdout))
	}
	os.Exit(m.Run())
}
