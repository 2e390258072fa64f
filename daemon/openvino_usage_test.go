//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weatherToolJSON is the tool of npu/openvino's renderedConversations,
// byte for byte (the Qwen3 template writes it with its keys in this order).
const weatherToolJSON = `{"type":"function","function":{"name":"get_weather","description":"Get the current weather in a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string","description":"The city's name"}},"required":["city"]}}}`

// Issue 39 item 7: on the test library the tiny model's usage is what the
// real GenAI reports for the same request: the test GenAI counts the
// prompt npud rendered (through the prompt view's pass-through template)
// with the model's byte-level BPE, as the real tokenizer does. The counts
// are the real runtime's: GenAI's own rendering of each conversation with
// the model's Qwen3 template, encoded by openvino_genai.Tokenizer
// (npu/openvino's TestOfficialTestLibraryTokenizesLikeGenAI asserts the
// same numbers for the same conversations).
func TestOpenVINOUsageIsGenAIsCount(t *testing.T) {
	c := startRenderedTiny(t)
	for _, tc := range []struct {
		name, body string
		prompt     int
	}{
		{"say hello", `{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"Say hello"}]}`, 22},
		{"thinking off", `{"model":"tiny","max_tokens":4,"reasoning_effort":"none","messages":[{"role":"user","content":"Say hello"}]}`, 28},
		{"one tool", `{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"What's the weather in Paris?"}],"tools":[` + weatherToolJSON + `]}`, 445},
		{"a second turn", `{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"Say hello"},{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"Tell me a joke about 42 cats.\n\nMake it short."}]}`, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			var out chatUsage
			require.NoError(t, json.Unmarshal(raw, &out))
			assert.Equal(t, tc.prompt, out.Usage.PromptTokens, "GenAI's count of the rendered prompt")
		})
	}
}
