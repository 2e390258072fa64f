//go:build cgo

package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 40: an embedding model runs in its worker process like any model:
// /v1/embeddings and /api/embed answer its vectors and token counts from
// the worker, /api/ps lists it while kept alive, and keep_alive 0
// unloads it (the test library's core runs the embedding model).
func TestEmbeddingModelInAWorker(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	models := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, models, "embed", 8)
	t.Setenv("OVTEST_DEVICES", "CPU")
	base := serveOpenVINO(t, "--isolation", "process", "--openvino-lib", lib, "--models-dir", models, "--cache-dir", "", "--device", "CPU")
	post := func(path, body string, into any) http.Header {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.NoError(t, json.Unmarshal(b, into))
		return resp.Header
	}
	ps := func() []string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/ps", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var list struct{ Models []struct{ Name string } }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
		var names []string
		for _, m := range list.Models {
			names = append(names, m.Name)
		}
		return names
	}
	texts := []string{"the NPU", "one two three four five six seven eight nine ten"}

	var openai struct {
		Data  []struct{ Embedding []float32 }
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	h := post("/v1/embeddings", `{"model":"embed","input":["the NPU","one two three four five six seven eight nine ten"],"truncate":true}`, &openai)
	assert.Equal(t, "1", h.Get("X-Npud-Truncated-Inputs"), "the worker says what it cut")
	require.Len(t, openai.Data, 2)
	for i, text := range texts {
		assert.InDeltaSlice(t, ovtestlib.Embedding(text, 8), openai.Data[i].Embedding, 1e-6, "input %d", i)
	}
	assert.Equal(t, 2+8, openai.Usage.PromptTokens, "the second text is cut at the model's 8 positions")
	assert.Contains(t, ps(), "embed", "kept alive after the embedding")

	var ollama struct {
		Embeddings      [][]float32
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	post("/api/embed", `{"model":"embed","input":"the NPU","keep_alive":0}`, &ollama)
	require.Len(t, ollama.Embeddings, 1)
	assert.InDeltaSlice(t, ovtestlib.Embedding("the NPU", 8), ollama.Embeddings[0], 1e-6)
	assert.Equal(t, 2, ollama.PromptEvalCount)
	assert.Eventually(t, func() bool { return len(ps()) == 0 }, 10e9, 10e6, "keep_alive 0 unloads it")
}

// Issue 40: a request's input_type puts the model's prompt for that kind
// of text (its folder's config_sentence_transformers.json, as
// Qwen3-Embedding's query instruction) before each input, on
// /v1/embeddings and /api/embed alike: the vectors and token counts are
// those of the prompted text. A kind the model has no prompt for is a 400
// naming input_type, never an embedding without the instruction. A text
// past the model's length is refused on OpenAI's API unless truncate asks
// for the cut, and cut on Ollama's unless truncate is false; a cut is
// counted in X-Npud-Truncated-Inputs whenever one was allowed.
func TestEmbeddingPromptsAndTruncationOnEveryAPI(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	models := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, models, "e5", 8)
	require.NoError(t, os.WriteFile(filepath.Join(models, "e5", "config_sentence_transformers.json"),
		[]byte(`{"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": null}`), 0o644))
	ovtestlib.WriteEmbeddingModel(t, models, "plain", 8)
	ovtestlib.WriteEmbeddingModel(t, models, "broken", 8)
	require.NoError(t, os.WriteFile(filepath.Join(models, "broken", "config_sentence_transformers.json"),
		[]byte(`{"prompts": {"query": 7}}`), 0o644))
	t.Setenv("OVTEST_DEVICES", "CPU")
	base := serveOpenVINO(t, "--isolation", "none", "--openvino-lib", lib, "--models-dir", models, "--cache-dir", "", "--device", "CPU")
	post := func(path, body string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, b
	}
	long := "one two three four five six seven eight nine ten"
	for _, tc := range []struct {
		name, path, body string
		embedded         string // the text the vector must be of; "" for a refusal
		refusal          string
		truncated        string // X-Npud-Truncated-Inputs: "" absent
	}{
		{"openai query", "/v1/embeddings", `{"model":"e5","input":"the NPU","input_type":"query"}`, "query: the NPU", "", ""},
		{"openai document", "/v1/embeddings", `{"model":"e5","input":["the NPU"],"input_type":"document"}`, "passage: the NPU", "", ""},
		{"openai none", "/v1/embeddings", `{"model":"e5","input":"the NPU"}`, "the NPU", "", ""},
		{"ollama query", "/api/embed", `{"model":"e5","input":"the NPU","input_type":"query"}`, "query: the NPU", "", "0"},
		{"ollama none", "/api/embed", `{"model":"e5","input":"the NPU"}`, "the NPU", "", "0"},
		// Past the model's 8 tokens: OpenAI's API refuses unless asked to cut,
		// Ollama's cuts unless asked not to; a cut is always said.
		{"openai too long", "/v1/embeddings", `{"model":"e5","input":["the NPU","` + long + `"]}`, "",
			"input 1 is 10 tokens, more than the model's 8 (allow truncation to cut it)", ""},
		{"openai truncate", "/v1/embeddings", `{"model":"e5","input":"` + long + `","truncate":true}`, long, "", "1"},
		{"openai truncate, nothing cut", "/v1/embeddings", `{"model":"e5","input":"the NPU","truncate":true}`, "the NPU", "", "0"},
		{"openai prompt past the length", "/v1/embeddings", `{"model":"e5","input":"two three four five six seven eight nine","input_type":"query"}`, "",
			"input 0 is 9 tokens, more than the model's 8", ""},
		{"ollama cuts by default", "/api/embed", `{"model":"e5","input":"` + long + `"}`, long, "", "1"},
		{"ollama truncate false", "/api/embed", `{"model":"e5","input":["` + long + `"],"truncate":false}`, "",
			"input 0 is 10 tokens, more than the model's 8", ""},
		{"unknown kind", "/v1/embeddings", `{"model":"e5","input":"the NPU","input_type":"search_query"}`, "",
			`model "e5" has no prompt for input_type "search_query"; it has document, query`, ""},
		{"unknown kind, ollama", "/api/embed", `{"model":"e5","input":"the NPU","input_type":"passage"}`, "",
			`model "e5" has no prompt for input_type "passage"; it has document, query`, ""},
		{"no prompts", "/v1/embeddings", `{"model":"plain","input":"the NPU","input_type":"query"}`, "",
			`model "plain" has no prompt for input_type "query": its folder defines none; leave input_type out`, ""},
		{"unreadable prompts", "/v1/embeddings", `{"model":"broken","input":"the NPU","input_type":"query"}`, "",
			`its folder's prompts are unreadable (config_sentence_transformers.json: prompt "query" is not a string)`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, header, body := post(tc.path, tc.body)
			assert.Equal(t, tc.truncated, header.Get("X-Npud-Truncated-Inputs"))
			if tc.refusal != "" {
				require.Equal(t, http.StatusBadRequest, status, "%s", body)
				if tc.path == "/api/embed" { // Ollama's shape: the message alone
					var e struct{ Error string }
					require.NoError(t, json.Unmarshal(body, &e))
					assert.Contains(t, e.Error, tc.refusal)
					return
				}
				var e struct {
					Error struct{ Message, Param string }
				}
				require.NoError(t, json.Unmarshal(body, &e))
				assert.Contains(t, e.Error.Message, tc.refusal)
				param := "input_type"
				if strings.Contains(tc.refusal, "tokens, more than") {
					param = "input"
				}
				assert.Equal(t, param, e.Error.Param)
				return
			}
			require.Equal(t, http.StatusOK, status, "%s", body)
			var got struct {
				Data       []struct{ Embedding []float32 }
				Embeddings [][]float32
				Usage      struct {
					PromptTokens int `json:"prompt_tokens"`
				}
				PromptEvalCount int `json:"prompt_eval_count"`
			}
			require.NoError(t, json.Unmarshal(body, &got))
			vector, tokens := got.Embeddings, got.PromptEvalCount
			if tc.path == "/v1/embeddings" {
				require.Len(t, got.Data, 1)
				vector, tokens = [][]float32{got.Data[0].Embedding}, got.Usage.PromptTokens
			}
			require.Len(t, vector, 1)
			assert.InDeltaSlice(t, ovtestlib.Embedding(tc.embedded, 8), vector[0], 1e-6)
			assert.Equal(t, min(len(ovtestlib.Tokens(tc.embedded)), 8), tokens)
		})
	}
}
