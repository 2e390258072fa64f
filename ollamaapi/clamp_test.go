package ollamaapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/reqinfo"
)

// TestNumPredictClamped (issue 31): num_predict larger than the room the
// prompt leaves in the context is lowered to that room, as Ollama itself
// generates up to what fits: done_reason length, true counts, and the
// X-Npud-Max-Tokens-Clamped header. A prompt that leaves no room is a 400.
func TestNumPredictClamped(t *testing.T) {
	const contextLength = 24 // less than the simulated answer (32 tokens or more)
	srv := daemontest.Start(t, daemontest.Defaults(t), sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, ContextLength: contextLength}))
	c := daemontest.NewClient(t, srv.URL)
	const msgs = `"messages":[{"role":"user","content":"hi"}]`

	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/api/chat", `{"model":"sim","stream":false,` + msgs + `,"options":{"num_predict":32000}}`},
		{"chat, streaming", "/api/chat", `{"model":"sim",` + msgs + `,"options":{"num_predict":32000}}`},
		{"generate", "/api/generate", `{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":32000}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			ran, err := strconv.Atoi(resp.Header.Get(reqinfo.MaxTokensClampedHeader))
			require.NoError(t, err, "the header says the limit it ran with")
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			var final struct {
				Done            bool   `json:"done"`
				DoneReason      string `json:"done_reason"`
				PromptEvalCount int    `json:"prompt_eval_count"`
				EvalCount       int    `json:"eval_count"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &final))
			require.True(t, final.Done)
			assert.Equal(t, "length", final.DoneReason, "the clamp was reached")
			assert.Equal(t, ran, final.EvalCount)
			assert.Equal(t, contextLength, final.PromptEvalCount+final.EvalCount, "the clamp is the room the prompt left")
		})
	}

	t.Run("num_predict -1 fills the room, unclamped", func(t *testing.T) {
		resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":-1}}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Empty(t, resp.Header.Get(reqinfo.MaxTokensClampedHeader), "no limit asked, none lowered")
		assert.Contains(t, string(raw), `"done_reason":"length"`)
	})

	t.Run("a prompt over the context is refused", func(t *testing.T) {
		long := strings.Repeat("x", 4*contextLength)
		resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"`+long+`","options":{"num_predict":32000}}`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
		var e map[string]any
		require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
		assert.Contains(t, e["error"], "context")
		assert.Empty(t, resp.Header.Get(reqinfo.MaxTokensClampedHeader))
	})
}
