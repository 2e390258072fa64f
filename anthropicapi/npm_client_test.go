package anthropicapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// runAnthropicJS runs one scenario of testdata/js/anthropic_e2e.mjs (the
// official Anthropic JavaScript client) against base.
func runAnthropicJS(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	return daemontest.RunJS(t, "@anthropic-ai/sdk", "anthropic_e2e.mjs", base, scenario)
}

func TestAnthropicJSToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicJS(t, srv.URL, "toolLoop")
	called, _ := r["called"].([]any)
	require.Len(t, called, 1, "%v", r)
	assert.IsType(t, "", called[0].(map[string]any)["city"])
	assert.Equal(t, []any{"tool_use", "end_turn"}, r["stopReasons"])
	assert.Greater(t, r["inputJsonEvents"], 0.0)
	assert.NotEmpty(t, r["text"])
}

func TestAnthropicJSThinking(t *testing.T) {
	daemontest.SimOnly(t, "the test library's model has no thinking template (daemon/openvino_thinking_test.go covers the engine's split)")
	srv := daemontest.StartEngine(t, nil, nil)
	r := runAnthropicJS(t, srv.URL, "thinking")
	assert.Greater(t, r["thinkingEvents"], 0.0, "%v", r)
	assert.Greater(t, r["textEvents"], 0.0)
	assert.Equal(t, []any{"thinking", "text"}, r["blocks"])
	usage := r["usage"].(map[string]any)
	assert.Greater(t, usage["input_tokens"], 0.0)
	assert.Greater(t, usage["output_tokens"], 0.0)
}

func TestAnthropicJSCountTokensAndErrors(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	assert.Greater(t, runAnthropicJS(t, srv.URL, "countTokens")["inputTokens"], 0.0)
	r := runAnthropicJS(t, srv.URL, "notFound")
	assert.Equal(t, "NotFoundError", r["error"], "%v", r)
	assert.Equal(t, 404.0, r["status"])
	assert.Equal(t, "not_found_error", r["type"])
	assert.Contains(t, r["message"], "--alias")
}
