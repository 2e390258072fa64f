package daemontest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// PythonTranscription transcribes the audio file at path with model
// through the official OpenAI Python client (testdata/python/
// openai_audio.py: every response format, a translation, a stream, a
// refused format) and checks what does not depend on the engine: the
// formats agree with each other and with the audio's length (seconds),
// the stream ends with its done event and carries the same text, the
// refusal is a 400 naming response_format. It returns the client's
// results for the engine's own checks of what it heard.
func PythonTranscription(t *testing.T, base, model, path string, seconds float64) map[string]any {
	t.Helper()
	r := RunPython(t, "openai_audio.py", base, model, path)
	verbose := r["verbose"].(map[string]any)
	assert.InDelta(t, seconds, verbose["duration"], 0.001)
	require.Len(t, verbose["segments"], 1)
	assert.InDelta(t, seconds, verbose["segments"].([]any)[0].(map[string]any)["end"], 0.02)
	assert.Equal(t, r["json"].(string)+"\n", r["text"])
	assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:0[0-9],[0-9]{3}\n[^\n]*[0-9.]+ seconds, [^\n]+\n\n$`, r["srt"])
	assert.True(t, strings.HasPrefix(r["vtt"].(string), "WEBVTT\n\n00:00:00.000 --> "), "%q", r["vtt"])
	assert.True(t, strings.HasPrefix(r["translation"].(string), "Translated: "), "the task reached the engine: %q", r["translation"])
	events := r["events"].([]any)
	require.NotEmpty(t, events)
	assert.Equal(t, "transcript.text.done", events[len(events)-1])
	assert.Equal(t, r["json"], r["stream_text"])
	assert.Equal(t, r["json"], r["deltas"])
	refused := r["refused"].(map[string]any)
	assert.EqualValues(t, 400, refused["status"])
	assert.Equal(t, "response_format", refused["param"])
	return r
}
