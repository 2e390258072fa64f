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

// JSClientDir is the pinned install of the official JavaScript clients
// (`make test` runs npm ci there), relative to a package folder.
var JSClientDir = filepath.Join("..", "testdata", "js")

// RunJS runs script (a scenario file in JSClientDir) with node and args,
// and decodes the JSON object it printed. It skips when node or the npm
// package module is missing, except in CI, where `make test` installs them,
// and under -short.
func RunJS(t testing.TB, module, script string, args ...string) map[string]any {
	t.Helper()
	Integration(t, "runs the official npm client")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(JSClientDir, "node_modules", module))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the %s npm package is not installed (make test runs npm ci in testdata/js): %v", module, err)
		}
		t.Skipf("the %s npm package is not installed: run npm ci in testdata/js (%v)", module, err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{script}, args...)...)
	cmd.Dir = JSClientDir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("node %s: %v: %s", script, err, exitErr.Stderr)
		}
		t.Fatalf("node %s: %v", script, err)
	}
	var result map[string]any
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("node %s printed %q: %v", script, out, err)
	}
	return result
}
