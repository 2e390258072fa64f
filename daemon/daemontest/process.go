package daemontest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BuildNPUD builds the npud binary (with cgo: the OpenVINO engine) into
// the test's temporary folder.
func BuildNPUD(t testing.TB) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "npud")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if built, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, built)
	}
	return bin
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
