package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/sim"
)

// TestAccessLogSaysMaxTokensClamped (issue 31): the access log names the
// completion limit a request ran with when its own was lowered to fit the
// context, on both APIs, and says nothing when it was not.
func TestAccessLogSaysMaxTokensClamped(t *testing.T) {
	r := startServer(t, nil, sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, ContextLength: 24}))
	for _, tc := range []struct {
		id, path, body string
		clamped        bool
	}{
		{"clamp-openai", "/v1/chat/completions", `{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":32000}`, true},
		{"clamp-ollama", "/api/generate", `{"model":"sim","prompt":"hi","options":{"num_predict":32000}}`, true},
		{"clamp-none", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("X-Request-ID", tc.id)
			resp, err := r.client.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var line map[string]any
			require.Eventually(t, func() bool {
				lines := r.logs.accessLines(tc.id)
				if len(lines) == 0 {
					return false
				}
				line = lines[0]
				return true
			}, 5*time.Second, 5*time.Millisecond)
			assert.Equal(t, "length", line["finish_reason"])
			if !tc.clamped {
				assert.NotContains(t, line, "max_tokens_clamped")
				return
			}
			assert.Equal(t, resp.Header.Get("X-Npud-Max-Tokens-Clamped"), fmt.Sprint(line["max_tokens_clamped"]))
			assert.Equal(t, line["tokens_out"], line["max_tokens_clamped"], "it generated up to the clamp")
		})
	}
}
