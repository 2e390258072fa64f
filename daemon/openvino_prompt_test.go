//go:build cgo

package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/reqinfo"
)

// tinyModelContext is the tiny model's max_position_embeddings
// (testdata/openvino/tinymodel/model/config.json).
const tinyModelContext = 2048

// copyTinyModel puts the project's tiny model (the published Qwen3
// template, a real tokenizer IR) in the models folder as name.
func copyTinyModel(t *testing.T, models, name string) {
	t.Helper()
	src := "../testdata/openvino/tinymodel/model"
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(models, name), 0o755))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(models, name, e.Name()), b, 0o644))
	}
}

// startRenderedTiny serves the tiny model on the OpenVINO engine through
// the test library, and skips unless npud renders its prompts.
func startRenderedTiny(t *testing.T) *daemontest.Client {
	t.Helper()
	dir := t.TempDir()
	copyTinyModel(t, dir, "tiny")
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/show", `{"model":"tiny"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	require.NoError(t, json.Unmarshal(raw, &show))
	require.Equal(t, "qwen3", show.ModelInfo["npud.prompt_renderer"], "npud renders the tiny model's published Qwen3 template")
	return c
}

type chatUsage struct {
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// Issue 39 item 5: no request makes prompt plus completion exceed the
// context: max_tokens is clamped to exactly the room the counted prompt
// leaves, num_ctx is the request's context, and a prompt that leaves no
// room is a 400 before anything runs.
func TestOpenVINONothingExceedsTheContext(t *testing.T) {
	c := startRenderedTiny(t)

	// max_tokens 10^8: clamped to the room, and prompt + completion fit.
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"tiny","messages":[{"role":"user","content":"Say hello"}],"max_tokens":100000000}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out chatUsage
	require.NoError(t, json.Unmarshal(raw, &out))
	prompt := out.Usage.PromptTokens
	assert.Greater(t, prompt, 2, "the templated prompt is counted, not its two words")
	assert.Equal(t, strconv.Itoa(tinyModelContext-prompt), resp.Header.Get(reqinfo.MaxTokensClampedHeader))
	assert.LessOrEqual(t, prompt+out.Usage.CompletionTokens, tinyModelContext)

	// num_predict -1 with a small num_ctx: the answer stops at num_ctx.
	for _, numCtx := range []int{prompt + 1, prompt + 5, 64} {
		t.Run(fmt.Sprintf("num_ctx %d", numCtx), func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, "/api/generate", fmt.Sprintf(
				`{"model":"tiny","prompt":"Say hello","stream":false,"options":{"num_predict":-1,"num_ctx":%d}}`, numCtx))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			var g struct {
				PromptEvalCount int    `json:"prompt_eval_count"`
				EvalCount       int    `json:"eval_count"`
				DoneReason      string `json:"done_reason"`
			}
			require.NoError(t, json.Unmarshal(raw, &g))
			assert.Equal(t, prompt, g.PromptEvalCount, "a plain prompt is templated as one user message")
			assert.LessOrEqual(t, g.PromptEvalCount+g.EvalCount, numCtx, "%s", raw)
			if g.PromptEvalCount+g.EvalCount == numCtx {
				assert.Equal(t, "length", g.DoneReason)
			}
		})
	}

	// A prompt that leaves no room: one token over (num_ctx equal to the
	// prompt) is refused before anything runs, on every API.
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", fmt.Sprintf(
		`{"model":"tiny","prompt":"Say hello","stream":true,"options":{"num_ctx":%d}}`, prompt))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "no room")

	long := strings.Repeat("word ", tinyModelContext)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"tiny","stream":true,"messages":[{"role":"user","content":"` + long + `"}]}`},
		{"/v1/messages", `{"model":"tiny","max_tokens":10,"messages":[{"role":"user","content":"` + long + `"}]}`},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"` + long + `"}]}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
			assert.Contains(t, string(raw), "context")
		})
	}
}

// Issue 39 item 5: Ollama keeps a chat inside num_ctx by dropping its
// oldest turns, sized by exact counts: the answer comes, and the prompt
// it reports fits.
func TestOpenVINODropsOldestTurnsByExactCounts(t *testing.T) {
	c := startRenderedTiny(t)
	var msgs []string
	for i := range 12 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d with some words in it"}`, i),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d with some words in it too"}`, i))
	}
	msgs = append(msgs, `{"role":"user","content":"the last question"}`)
	const numCtx = 120
	resp, raw := c.Do(t, http.MethodPost, "/api/chat", fmt.Sprintf(
		`{"model":"tiny","stream":false,"messages":[%s],"options":{"num_ctx":%d,"num_predict":4}}`, strings.Join(msgs, ","), numCtx))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var g struct {
		PromptEvalCount int `json:"prompt_eval_count"`
		EvalCount       int `json:"eval_count"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	assert.Less(t, g.PromptEvalCount, numCtx)
	assert.Greater(t, g.PromptEvalCount, numCtx/2, "only as many turns dropped as needed")
	assert.LessOrEqual(t, g.PromptEvalCount+g.EvalCount, numCtx)
}

// Issue 39 item 6: a conversation that ends with an assistant's message
// continues it (Anthropic's prefill): the answer is the rest of it.
func TestOpenVINOContinuesAnAssistantPrefill(t *testing.T) {
	c := startRenderedTiny(t)
	resp, raw := c.Do(t, http.MethodPost, "/v1/messages",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"Name a colour."},{"role":"assistant","content":"The colour is"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var m struct {
		Content []struct{ Text string } `json:"content"`
		Usage   struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	require.NotEmpty(t, m.Content)
	assert.NotContains(t, m.Content[0].Text, "The colour is", "only the rest is answered")

	// The prefilled prompt ends inside the assistant's turn: it is shorter
	// than the same conversation with a new assistant turn opened after it.
	resp, raw = c.Do(t, http.MethodPost, "/v1/messages",
		`{"model":"tiny","max_tokens":5,"messages":[{"role":"user","content":"Name a colour."},{"role":"assistant","content":"The colour is"},{"role":"user","content":"go on"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var next struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &next))
	assert.Less(t, m.Usage.InputTokens, next.Usage.InputTokens)
}

// A model's own max_new_tokens (generation_config.json) still bounds an
// answer that sets no max_tokens when it is smaller than the room left.
func TestOpenVINOKeepsTheModelsMaxNewTokens(t *testing.T) {
	dir := t.TempDir()
	copyTinyModel(t, dir, "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny", "generation_config.json"),
		[]byte(`{"eos_token_id": 2, "max_new_tokens": 3}`), 0o644))
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Say hello"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out chatUsage
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.LessOrEqual(t, out.Usage.CompletionTokens, 3, "%s", raw)
	assert.Equal(t, "length", out.Choices[0].FinishReason, "%s", raw)
}

// Issue 37: the official clients' structured paths on the OpenVINO engine
// (the test library, the tiny model npud renders): the test library's
// model writes words, never JSON, and every answer still parses into the
// client's pydantic model, whole and streamed, because npud holds the
// generation to the schema.
func TestOpenVINOStructuredOutputWithTheOfficialClients(t *testing.T) {
	dir := t.TempDir()
	copyTinyModel(t, dir, "sim") // the scripts ask for "sim"
	url := startOpenVINOFolder(t, dir).URL
	for _, tc := range []struct{ script, scenario string }{
		{"openai_e2e.py", "structured_chat"},
		{"openai_e2e.py", "structured_responses"},
		{"openai_e2e.py", "langchain_structured"},
		{"anthropic_e2e.py", "structured"},
		{"ollama_e2e.py", "structured"},
	} {
		t.Run(tc.script+" "+tc.scenario, func(t *testing.T) {
			r := daemontest.RunPython(t, tc.script, url, tc.scenario)
			assert.NotEmpty(t, r, "the script's answers parsed into its models")
		})
	}
}

// Issue 37: the metrics count a structured answer's resumes (the test
// library's model writes words, so every answer needs some).
func TestOpenVINOStructuredResumesAreCounted(t *testing.T) {
	dir := t.TempDir()
	copyTinyModel(t, dir, "tiny")
	srv := startOpenVINOFolder(t, dir)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"Who?"}],`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"P","schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Positive(t, scrapeMetrics(t, srv.URL).sum("npud_structured_output_total", "model", "tiny", "outcome", "resumed"))
}
