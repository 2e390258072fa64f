package e2e

import (
	"bufio"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// repoRoot is the repository, relative to this package.
var repoRoot = filepath.Join("..", "..")

// docFiles are the documents a user reads: the README and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// docBlock is a fenced code block of a document: its info string (what
// follows the opening fence) and its text.
type docBlock struct {
	file, info, text string
	line             int
}

// docBlocks reads a Markdown file's fenced code blocks.
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var blocks []docBlock
	var open *docBlock
	for n, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case open == nil && strings.HasPrefix(trimmed, "```"):
			open = &docBlock{file: file, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: n + 1}
		case open != nil && trimmed == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.text += line + "\n"
		}
	}
	require.Nil(t, open, "%s: a code block is never closed", file)
	return blocks
}

// curlPrelude makes every curl of a block say what it ran and how the
// answer came (status and content type), between markers the test reads.
const curlPrelude = `curl() {
	printf '\n@@doctest curl %s\n' "$(printf '%s' "$*" | tr '\n' ' ')"
	command curl --max-time 30 -w '\n@@status %{http_code} %{content_type}\n' "$@"
}
`

// docAnswer is what one curl of a block got.
type docAnswer struct {
	command, contentType, body string
	status                     int
}

// runDocBlock runs a block's commands with sh against base (the docs
// name 127.0.0.1:11434) and splits what each curl got.
func runDocBlock(t *testing.T, curl, base string, b docBlock) []docAnswer {
	t.Helper()
	script := strings.NewReplacer("http://127.0.0.1:11434", base, "localhost:11434", strings.TrimPrefix(base, "http://")).Replace(b.text)
	cmd := exec.CommandContext(t.Context(), "sh", "-e", "-c", curlPrelude+script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(curl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr // curl's progress meter, and what went wrong
	out, err := cmd.Output()
	require.NoError(t, err, "%s:%d:\n%s%s", b.file, b.line, out, stderr.String())
	var answers []docAnswer
	for _, part := range strings.Split(string(out), "\n@@doctest ")[1:] {
		command, rest, _ := strings.Cut(part, "\n")
		body, status, ok := strings.Cut(rest, "\n@@status ")
		require.True(t, ok, "%s:%d: %s: no status:\n%s", b.file, b.line, command, out)
		fields := strings.Fields(status)
		require.NotEmpty(t, fields)
		code, err := strconv.Atoi(fields[0])
		require.NoError(t, err)
		a := docAnswer{command: command, body: body, status: code}
		if len(fields) > 1 {
			a.contentType = fields[1]
		}
		answers = append(answers, a)
	}
	return answers
}

// checkShape checks an answer is whole in the shape its content type
// promises: one JSON value, NDJSON lines ending with the last object, or
// server-sent events whose data lines are JSON (or OpenAI's [DONE]).
func checkShape(t *testing.T, where string, a docAnswer) {
	t.Helper()
	body := strings.TrimSpace(a.body)
	require.NotEmpty(t, body, "%s: %s: an empty answer", where, a.command)
	switch {
	case strings.HasPrefix(a.contentType, "application/json"):
		assert.True(t, json.Valid([]byte(body)), "%s: %s: not JSON: %s", where, a.command, body)
	case strings.HasPrefix(a.contentType, "application/x-ndjson"):
		lines := strings.Split(body, "\n")
		for _, l := range lines {
			assert.True(t, json.Valid([]byte(l)), "%s: %s: an NDJSON line is not JSON: %s", where, a.command, l)
		}
		last := lines[len(lines)-1]
		assert.Regexp(t, `"done":true|"status":"success"`, last, "%s: %s: the stream has no last object", where, a.command)
	case strings.HasPrefix(a.contentType, "text/event-stream"):
		var data []string
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = append(data, d)
			}
		}
		require.NotEmpty(t, data, "%s: %s: no events", where, a.command)
		for _, d := range data {
			assert.True(t, d == "[DONE]" || json.Valid([]byte(d)), "%s: %s: an event is not JSON: %s", where, a.command, d)
			assert.NotContains(t, d, `"error"`, "%s: %s: the stream failed", where, a.command)
		}
	default:
		t.Errorf("%s: %s: unexpected content type %q", where, a.command, a.contentType)
	}
}

// Issue 35: docs/OLLAMA.md said images, tools and tool messages are refused
// and /api/pull is a 501 on the simulated engine; nothing ran what the docs
// show. Every block marked `sh doctest` in the README and docs/ runs here,
// against a daemon on the simulated engine: each curl must answer 2xx with
// a whole body in its content type's shape.
func TestDocExamplesRun(t *testing.T) {
	daemontest.Integration(t, "runs the docs' curl examples")
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed (make test installs it)")
		}
		t.Skip("curl is not installed")
	}
	srv := daemontest.StartSim(t, nil, nil)
	ran := 0
	for _, file := range docFiles(t) {
		for _, b := range docBlocks(t, file) {
			if fields := strings.Fields(b.info); len(fields) < 2 || fields[0] != "sh" || !slices.Contains(fields[1:], "doctest") {
				continue
			}
			where := fmt.Sprintf("%s:%d", filepath.Base(file), b.line)
			answers := runDocBlock(t, curl, srv.URL, b)
			require.NotEmpty(t, answers, "%s: a doctest block runs no curl", where)
			for _, a := range answers {
				assert.True(t, a.status >= 200 && a.status < 300, "%s: %s: status %d:\n%s", where, a.command, a.status, a.body)
				checkShape(t, where, a)
				ran++
			}
		}
	}
	assert.GreaterOrEqual(t, ran, 10, "the docs' runnable examples")
}

// testName is a test the docs name: `TestX`, and the package after it when
// they say where it is: `TestX` (`pkg`).
var testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`(?: \\(`([a-z/]+)`\\))?")

// Issue 35: docs/OPENVINO.md put TestOfficialDoctorInPipEnvironment in the
// daemon package (it is in cli). Every test the docs name exists, in the
// package they name.
func TestDocsNameTestsThatExist(t *testing.T) {
	where := map[string][]string{} // test name → the packages (folders) that declare it
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "venv") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			where[m[1]] = append(where[m[1]], filepath.ToSlash(dir))
		}
		return nil
	})
	require.NoError(t, err)
	named := 0
	for _, file := range docFiles(t) {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range testName.FindAllStringSubmatch(string(raw), -1) {
			named++
			dirs, ok := where[m[1]]
			if !assert.True(t, ok, "%s names %s, which no test declares", filepath.Base(file), m[1]) {
				continue
			}
			if m[2] != "" {
				assert.True(t, slices.ContainsFunc(dirs, func(d string) bool { return d == m[2] || strings.HasSuffix(d, "/"+m[2]) }),
					"%s puts %s in %s; it is in %v", filepath.Base(file), m[1], m[2], dirs)
			}
		}
	}
	assert.Greater(t, named, 20)
}
