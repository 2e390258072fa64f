package openaiapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// runOpenAIJS runs one scenario of testdata/js/openai_e2e.mjs (the
// official OpenAI JavaScript client, pinned by package-lock.json) against
// base and decodes what it printed.
func runOpenAIJS(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	dir := filepath.Join("..", "testdata", "js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "openai"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the openai npm client is not installed (make test runs npm ci in testdata/js): %v", err)
		}
		t.Skipf("the openai npm client is not installed: run npm ci in testdata/js (%v)", err)
	}
	cmd := exec.Command(node, "openai_e2e.mjs", base, scenario)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	var stderr string
	if exitErr, ok := err.(*exec.ExitError); ok {
		stderr = string(exitErr.Stderr)
	}
	require.NoError(t, err, "node: %s", stderr)
	var result map[string]any
	require.NoError(t, json.Unmarshal(out, &result), "output: %s", out)
	return result
}

// Issue 16: the client's own agent loop (runTools, streaming) completes:
// it called the function with the model's arguments and got an answer.
func TestOpenAIJSRunTools(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIJS(t, srv.URL, "runToolsLoop")
	called, _ := r["called"].([]any)
	require.Len(t, called, 1, "%v", r)
	assert.IsType(t, "", called[0].(map[string]any)["city"])
	assert.NotEmpty(t, r["finalContent"])
	assert.Equal(t, []any{"user", "assistant", "tool", "assistant"}, r["roles"])
}

func TestOpenAIJSStreamedToolCalls(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIJS(t, srv.URL, "streamToolCalls")
	assert.Equal(t, "tool_calls", r["finishReason"])
	calls, _ := r["toolCalls"].([]any)
	require.Len(t, calls, 1, "%v", r)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	assert.Equal(t, "get_weather", fn["name"])
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(fn["arguments"].(string)), &args))
	assert.IsType(t, "", args["city"])
	assert.Nil(t, r["content"])
	assert.Greater(t, r["argumentDeltas"], 0.0)
}
