package anthropicapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// runAnthropicPython runs one scenario of testdata/python/anthropic_e2e.py
// (the official Anthropic Python client) against base.
func runAnthropicPython(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	return daemontest.RunPython(t, "anthropic_e2e.py", base, scenario)
}

func TestAnthropicPythonToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicPython(t, srv.URL, "tool_loop")
	called, _ := r["called"].([]any)
	require.Len(t, called, 1, "%v", r)
	assert.IsType(t, "", called[0].(map[string]any)["city"])
	assert.Equal(t, []any{"tool_use", "end_turn"}, r["stop_reasons"])
	assert.Greater(t, r["input_json_events"], 0.0)
	assert.NotEmpty(t, r["text"])
}

func TestAnthropicPythonWholeMessage(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicPython(t, srv.URL, "whole")
	assert.Equal(t, "message", r["type"], "%v", r)
	assert.Equal(t, "assistant", r["role"])
	assert.Equal(t, "max_tokens", r["stop_reason"])
	assert.Equal(t, []any{"text"}, r["blocks"])
	assert.NotEmpty(t, r["text"])
	assert.Equal(t, 5.0, r["usage"].(map[string]any)["output_tokens"])
}

func TestAnthropicPythonThinking(t *testing.T) {
	daemontest.SimOnly(t, "the test library's model has no thinking template (daemon/openvino_thinking_test.go covers the engine's split)")
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicPython(t, srv.URL, "thinking")
	assert.Greater(t, r["thinking_events"], 0.0, "%v", r)
	assert.Greater(t, r["text_events"], 0.0)
	assert.Equal(t, []any{"thinking", "text"}, r["blocks"])
	usage := r["usage"].(map[string]any)
	assert.Greater(t, usage["input_tokens"], 0.0)
	assert.Greater(t, usage["output_tokens"], 0.0)
}

// Issue 39 item 5: client.messages.count_tokens answers the count a
// message of the same request reports, where npud counts the model's
// prompts (the simulator); the test library's model, whose prompts GenAI
// renders, keeps the estimate, and says so.
func TestAnthropicPythonCountTokensAndErrors(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicPython(t, srv.URL, "count_tokens")
	assert.Greater(t, r["input_tokens"], 0.0, "%v", r)
	if daemontest.EngineUnderTest() == "sim" {
		assert.Equal(t, false, r["npud_estimate"], "%v", r)
		assert.Equal(t, "exact", r["header"])
		assert.Equal(t, r["message_input_tokens"], r["input_tokens"], "count_tokens and the message's usage")
	} else {
		assert.Equal(t, true, r["npud_estimate"], "%v", r)
		assert.Equal(t, "estimate", r["header"])
	}
	r = runAnthropicPython(t, srv.URL, "not_found")
	assert.Equal(t, "NotFoundError", r["error"], "%v", r)
	assert.Equal(t, 404.0, r["status"])
	assert.Equal(t, "not_found_error", r["type"])
	assert.Contains(t, r["message"], "--alias")
}

// Issue 37: the anthropic package's structured parse (messages.parse and
// the stream helper with output_format=a pydantic model, sent as
// output_config.format) gets answers that parse into the model, on the
// simulated engine.
func TestAnthropicPythonStructuredParse(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	r := runAnthropicPython(t, srv.URL, "structured")
	for _, key := range []string{"whole", "streamed"} {
		city, ok := r[key].(map[string]any)
		require.True(t, ok, "%s: %v", key, r)
		assert.IsType(t, "", city["name"])
		assert.IsType(t, true, city["coastal"])
		assert.GreaterOrEqual(t, city["population"], 0.0)
	}
	assert.Equal(t, "end_turn", r["stop_reason"])
}
