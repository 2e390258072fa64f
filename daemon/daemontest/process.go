package daemontest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Integration skips t under go test -short: it needs what, which a
// developer's quick run does without (a real proxy, a browser, a built
// binary, an installed client). make test runs it.
func Integration(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("an integration test (" + what + "): not with -short")
	}
}

// Binary is the npud binary, built the first time a test of the package
// asks for it and shared by the rest: one build per test binary, not one
// per test. TestMain removes it.
type Binary struct {
	// Cgo builds with the OpenVINO engine; without, the binary has the
	// simulated engine only, whatever the machine has installed.
	Cgo bool

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary if no test did yet and returns its path. Tests
// that run it are integration tests: they skip under -short.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	Integration(t, "runs the npud binary")
	b.once.Do(func() { b.path, b.err = b.build() })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// build runs go build from the module root into a folder of its own,
// which outlives the test that asked first.
func (b *Binary) build() (string, error) {
	ctx := context.Background()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	if b.dir, err = os.MkdirTemp("", "npud-bin-"); err != nil {
		return "", err
	}
	bin := filepath.Join(b.dir, "npud")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b.Cgo {
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if built, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, built)
	}
	return bin, nil
}

// Remove deletes the binary, if it was built; TestMain calls it after the
// tests have run.
func (b *Binary) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// BuildNPUD builds the npud binary (with cgo: the OpenVINO engine) into
// the test's temporary folder; it skips under -short. A package with more
// than one test that runs the binary shares a Binary instead.
func BuildNPUD(t testing.TB) string {
	t.Helper()
	b := Binary{Cgo: true}
	t.Cleanup(b.Remove)
	return b.Path(t)
}

// ChildProcesses lists the live (not zombie) processes whose parent is
// pid, from /proc; it skips the test where there is no /proc.
func ChildProcesses(t testing.TB, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	parent := strconv.Itoa(pid)
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == parent && fields[0] != "Z" {
			out = append(out, e.Name())
		}
	}
	return out
}
