//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
)

// Issue 39 item 5: on the OpenVINO engine (the test library through the
// real binding, in a worker process), count_tokens of the tiny model,
// whose published Qwen3 template npud renders, is exact: the model's own
// tokenizer counts the rendered prompt in the model's worker, and the
// count is the prompt the same body's message reports. The count loads the
// model. A model whose template GenAI renders keeps the estimate.
func TestOpenVINOCountTokensIsExact(t *testing.T) {
	dir := t.TempDir()
	copyTinyModel(t, dir, "tiny")
	daemontest.WriteOpenVINOModel(t, dir, "genai-rendered") // a template npud does not reproduce
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)
	if renderer := promptRenderer(t, c, "tiny"); renderer == npu.GenAIRenders {
		t.Skip("npud does not render the tiny model's prompts yet (/api/show: npud.prompt_renderer is genai): " +
			"this passes once the Qwen3 renderer and the model's tokenizer are in")
	}

	_, raw := c.Do(t, http.MethodGet, "/api/ps", "")
	require.NotContains(t, string(raw), `"tiny"`, "not loaded before the count")
	_, how := countTokensOf(t, c, `{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, "exact", how)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"tiny"`, "the count loaded the model")
	for name, body := range countBodies {
		t.Run(name, func(t *testing.T) {
			body := strings.Replace(body, "%s", "tiny", 1)
			n, how := countTokensOf(t, c, body)
			assert.Equal(t, "exact", how)
			assert.Greater(t, n, 2, "the templated prompt, not its words alone")
			assert.Equal(t, messageInputTokens(t, c, body), n)
		})
	}

	_, how = countTokensOf(t, c, `{"model":"genai-rendered","messages":[{"role":"user","content":"Say hello"}]}`)
	assert.Equal(t, "estimate", how)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.NotContains(t, string(raw), `"genai-rendered"`, "a model npud does not count is not loaded to say so")
}

// promptRenderer is /api/show's npud.prompt_renderer of model.
func promptRenderer(t *testing.T, c *daemontest.Client, model string) any {
	t.Helper()
	resp, raw := c.Do(t, http.MethodPost, "/api/show", `{"model":"`+model+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	require.NoError(t, json.Unmarshal(raw, &show), "%s", raw)
	return show.ModelInfo["npud.prompt_renderer"]
}
