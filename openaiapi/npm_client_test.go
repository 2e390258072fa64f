package openaiapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// runOpenAIJS runs one scenario of testdata/js/openai_e2e.mjs (the
// official OpenAI JavaScript client) against base and decodes what it
// printed.
func runOpenAIJS(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	return daemontest.RunJS(t, "openai", "openai_e2e.mjs", base, scenario)
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
