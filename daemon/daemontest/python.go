package daemontest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// PythonClientDir holds the scenarios of the official Python clients and
// their pins (requirements.txt), relative to a package folder.
var PythonClientDir = filepath.Join("..", "testdata", "python")

// EnvPythonVenv names a virtual environment with exactly the pinned
// packages of PythonClientDir/requirements.txt (`make python-venv` makes
// testdata/python/venv, which is used when it is unset).
const EnvPythonVenv = "NPUD_PYTHON_VENV"

// PythonVenv is the virtual environment of the pinned Python packages. It
// skips when there is none, except in CI, where `make test` makes it.
func PythonVenv(t testing.TB) string {
	t.Helper()
	venv := os.Getenv(EnvPythonVenv)
	if venv == "" {
		venv = filepath.Join(PythonClientDir, "venv")
	}
	abs, err := filepath.Abs(venv)
	if err == nil {
		_, err = os.Stat(filepath.Join(abs, "bin", "python"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Python environment with the pinned packages (make test runs make python-venv): %v", err)
		}
		t.Skipf("no Python environment with the pinned packages: run make python-venv (%v)", err)
	}
	return abs
}

// RunPython runs script (a scenario file in PythonClientDir) with the
// pinned environment's python and args, and decodes the JSON object it
// printed.
func RunPython(t testing.TB, script string, args ...string) map[string]any {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Python and its client, about a second each: not with -short")
	}
	python := filepath.Join(PythonVenv(t), "bin", "python")
	cmd := exec.CommandContext(t.Context(), python, append([]string{script}, args...)...)
	cmd.Dir = PythonClientDir
	cmd.WaitDelay = 5 * time.Second
	// Only what it needs: no key, proxy or Python setting of the test's own.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1"}
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("python %s: %v: %s", script, err, exitErr.Stderr)
		}
		t.Fatalf("python %s: %v", script, err)
	}
	var result map[string]any
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("python %s printed %q: %v", script, out, err)
	}
	return result
}
