package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// finding is one diagnostic as go vet -json reports it, by linter.
type finding struct {
	linter, file string
	line         int
	message      string
}

// vetJSON is go vet -json's output for one package: analyzer → diagnostics.
type vetJSON map[string]map[string][]struct {
	Posn    string `json:"posn"`
	Message string `json:"message"`
}

// lintBad builds npudlint and runs it through go vet, as make check does,
// on testdata/bad: code each linter finds fault with.
func lintBad(t *testing.T) []finding {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "npudlint")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", tool, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	vet := exec.CommandContext(t.Context(), "go", "vet", "-json", "-vettool="+tool, "./...")
	vet.Dir = filepath.Join("testdata", "bad")
	out, err := vet.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
	linterOf := map[string]string{}
	for _, l := range linters() {
		for _, a := range l.analyzers {
			linterOf[a.Name] = l.name
		}
	}
	// The output is JSON objects, one a package, between "# package" lines.
	var text bytes.Buffer
	for line := range strings.Lines(string(out)) {
		if !strings.HasPrefix(line, "#") {
			text.WriteString(line)
		}
	}
	var found []finding
	dec := json.NewDecoder(&text)
	for dec.More() {
		var pkgs vetJSON
		if err := dec.Decode(&pkgs); err != nil {
			t.Fatalf("go vet -json: %v\n%s", err, out)
		}
		for _, byAnalyzer := range pkgs {
			for analyzer, diags := range byAnalyzer {
				for _, d := range diags {
					file, line := splitPosn(t, d.Posn)
					found = append(found, finding{linterOf[analyzer], file, line, d.Message})
				}
			}
		}
	}
	return found
}

// splitPosn reads file:line:column.
func splitPosn(t *testing.T, posn string) (string, int) {
	t.Helper()
	rest := posn[:max(strings.LastIndex(posn, ":"), 0)] // drop the column
	i := strings.LastIndex(rest, ":")
	line, err := strconv.Atoi(rest[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("position %q: %v", posn, err)
	}
	return rest[:i], line
}

// want is one `// want LINTER "REGEXP"` expectation of testdata/bad.
type want struct {
	linter, file string
	line         int
	re           *regexp.Regexp
}

var wantPair = regexp.MustCompile(`(\w+) ("(?:[^"\\]|\\.)*")`)

// wants reads every expectation in testdata/bad's Go files.
func wants(t *testing.T) []want {
	t.Helper()
	var all []want
	err := filepath.WalkDir(filepath.Join("testdata", "bad"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			_, spec, ok := strings.Cut(sc.Text(), "// want ")
			if !ok {
				continue
			}
			for _, m := range wantPair.FindAllStringSubmatch(spec, -1) {
				pattern, err := strconv.Unquote(m[2])
				if err != nil {
					return fmt.Errorf("%s:%d: %w", path, n, err)
				}
				all = append(all, want{m[1], abs, n, regexp.MustCompile(pattern)})
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// Issue 35: make check built golangci-lint from source, tens of minutes on
// a fresh 2-core machine. npudlint replaces it; it must find what those
// linters find. Each linter fires on its bad code in testdata/bad, and
// nothing else is reported there: what the settings exclude (printing,
// a body's Close, tests, Close in daemontest), what //nolint covers, and
// the staticcheck checks the settings turn off stay quiet.
func TestEachLinterFindsItsFault(t *testing.T) {
	found := lintBad(t)
	expected := wants(t)
	fired := map[string]bool{}
	for _, w := range expected {
		ok := slices.ContainsFunc(found, func(f finding) bool {
			return f.linter == w.linter && f.file == w.file && f.line == w.line && w.re.MatchString(f.message)
		})
		if !ok {
			t.Errorf("%s:%d: %s reported nothing matching %q", w.file, w.line, w.linter, w.re)
		}
		fired[w.linter] = true
	}
	for _, f := range found {
		ok := slices.ContainsFunc(expected, func(w want) bool {
			return f.linter == w.linter && f.file == w.file && f.line == w.line && w.re.MatchString(f.message)
		})
		if !ok {
			t.Errorf("%s:%d: unexpected %s finding: %s", f.file, f.line, f.linter, f.message)
		}
	}
	for _, l := range linters() {
		if !fired[l.name] {
			t.Errorf("testdata/bad has no finding of %s", l.name)
		}
	}
}

// The linters and staticcheck's settings are .golangci.yml's, which
// golangci-lint users (editors, one-off runs) still read: the two must not
// drift apart.
func TestLintersAreGolangciYAMLs(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("..", "..", ".golangci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var enabled []string
	inEnable := false
	for line := range strings.Lines(string(cfg)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "enable:":
			inEnable = true
		case inEnable && strings.HasPrefix(trimmed, "- "):
			enabled = append(enabled, strings.TrimPrefix(trimmed, "- "))
		default:
			inEnable = false
		}
	}
	var names []string
	for _, l := range linters() {
		names = append(names, l.name)
	}
	if !slices.Equal(enabled, names) {
		t.Errorf(".golangci.yml enables %v; npudlint runs %v", enabled, names)
	}
	checks := `checks: ["all", "-QF*"`
	for _, off := range staticcheckOff {
		checks += fmt.Sprintf(`, "-%s"`, off)
	}
	if !strings.Contains(string(cfg), checks+"]") {
		t.Errorf(".golangci.yml's staticcheck checks are not %s]", checks)
	}
	for _, fn := range errcheckExcluded {
		if !strings.Contains(string(cfg), "- "+fn+"\n") {
			t.Errorf(".golangci.yml's errcheck does not exclude %s", fn)
		}
	}
}
