//go:build cgo

package daemon_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 16, on the OpenVINO engine through the test library and engine
// workers: the tools reach the chat template (ov_genai_chat_history_set_tools)
// and each family's answer, as GenAI's detokenizer leaves it (special
// tokens such as [TOOL_CALLS] and <|python_tag|> dropped), is parsed into
// the same call; a model whose template renders no tools is refused.
func TestOpenVINOToolFamilies(t *testing.T) {
	templates := map[string]string{
		"qwen":    `{% if tools %}{{ tools | tojson }} <tool_call>{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}`,
		"llama":   `{% if tools %}{{ tools | tojson }} <|python_tag|> ipython{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}`,
		"mistral": `{% if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}[TOOL_CALLS]{% for m in messages %}{{ m.content }}{% endfor %}`,
		"phi":     `{% if tools %}<|tool|>{{ tools | tojson }}<|/tool|>{% endif %}<|tool_call|>{% for m in messages %}{{ m.content }}{% endfor %}`,
		"plain":   `{% for m in messages %}{{ m.content }}{% endfor %}`,
	}
	dir := t.TempDir()
	for name, tpl := range templates {
		daemontest.WriteOpenVINOModel(t, dir, name)
		// As Python's json writes it: < and > as they are.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(map[string]string{"chat_template": tpl}))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "tokenizer_config.json"), b.Bytes(), 0o644))
	}
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)

	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	for _, model := range []string{"qwen", "llama", "mistral", "phi"} {
		t.Run(model, func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions",
				`{"model":"`+model+`","messages":[{"role":"user","content":"weather in Oslo?"}],`+tools+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			var out struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   *string `json:"content"`
						ToolCalls []struct {
							ID       string `json:"id"`
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal(raw, &out))
			ch := out.Choices[0]
			assert.Equal(t, "tool_calls", ch.FinishReason, "%s", raw)
			require.Len(t, ch.Message.ToolCalls, 1, "%s", raw)
			assert.Nil(t, ch.Message.Content, "%s", raw)
			assert.Equal(t, "get_weather", ch.Message.ToolCalls[0].Function.Name)
			assert.JSONEq(t, `{"city": "ovtest"}`, ch.Message.ToolCalls[0].Function.Arguments)
			if model == "mistral" {
				assert.Regexp(t, `^[A-Za-z0-9]{9}$`, ch.Message.ToolCalls[0].ID, "Mistral's template takes only such ids")
			}
			_, show := c.Do(t, http.MethodPost, "/api/show", `{"model":"`+model+`"}`)
			assert.Contains(t, string(show), `"tools"`)
		})
	}

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"plain","messages":[{"role":"user","content":"x"}],`+tools+`}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `model \"plain\" does not support tools`)
	_, show := c.Do(t, http.MethodPost, "/api/show", `{"model":"plain"}`)
	assert.NotContains(t, string(show), `"tools"`)
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"plain","stream":false,"messages":[{"role":"user","content":"x"}],`+tools+`}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), `does not support tools`)
}

// startOpenVINOFolder serves the models folder dir with the OpenVINO
// engine (the test library, on CPU) in worker processes.
func startOpenVINOFolder(t *testing.T, dir string) *daemontest.Server {
	t.Helper()
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", dir, "CPU", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	cfg.Isolation = "process"
	cfg.TokenTimeout, cfg.PrefillTimeout = 5*time.Second, 5*time.Second
	return daemontest.Start(t, cfg, nil)
}
