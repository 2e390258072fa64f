//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 16, on the OpenVINO engine through the test library: a model whose
// chat template takes enable_thinking (Qwen3) reasons by default and its
// <think> block comes apart from the answer; think: false reaches the
// template through the chat history's extra context and the model answers
// straight away; a model without it refuses think: true.
func TestOpenVINOThinking(t *testing.T) {
	srv, dir := startWorkers(t, "CPU", nil, "qwen3", "plain")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "qwen3", "tokenizer_config.json"),
		[]byte(`{"chat_template": "{% if enable_thinking is defined and enable_thinking is false %}<think></think>{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"}`), 0o644))
	// The models were scanned at the start: look again (a copy rescans).
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/copy", `{"source":"qwen3","destination":"qwen3-thinking"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)

	chat := func(think string) (content, thinking string, status int, body string) {
		body = `{"model":"qwen3-thinking","stream":false,"options":{"seed":1},"messages":[{"role":"user","content":"hello"}]` + think + `}`
		resp, raw := c.Do(t, http.MethodPost, "/api/chat", body)
		var out struct {
			Message struct{ Content, Thinking string }
		}
		_ = json.Unmarshal(raw, &out)
		return out.Message.Content, out.Message.Thinking, resp.StatusCode, string(raw)
	}
	content, thinking, status, raw2 := chat("")
	require.Equal(t, http.StatusOK, status, raw2)
	assert.NotEmpty(t, thinking, "a thinking model reasons by default")
	assert.NotContains(t, content, "think>", "and its reasoning stays out of the answer")
	assert.NotEmpty(t, content)

	content2, thinking2, status, raw2 := chat(`,"think":false`)
	require.Equal(t, http.StatusOK, status, raw2)
	assert.Empty(t, thinking2, "enable_thinking false reached the template")
	assert.NotEmpty(t, content2)

	_, thinking3, status, raw2 := chat(`,"think":"high"`)
	require.Equal(t, http.StatusOK, status, raw2)
	assert.Equal(t, thinking, thinking3)

	_, raw = c.Do(t, http.MethodPost, "/api/show", `{"model":"qwen3-thinking"}`)
	assert.Contains(t, string(raw), `"thinking"`)
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"plain","think":true,"messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `model \"plain\" does not support thinking`)
}
