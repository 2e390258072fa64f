//go:build cgo

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/openvino"
)

// genaiRanking is the official TextRerankPipeline's ranking of docs
// against query on the tiny cross-encoder (index and score, best first),
// and the tokens of all its pairs.
func genaiRanking(t *testing.T, venv, query string, docs []string) (ranking [][2]float64, tokens int) {
	t.Helper()
	return genaiRankingOf(t, venv, "tinyrerank", query, docs)
}

// genaiRankingOf is genaiRanking on the tiny model testdata/openvino/NAME.
func genaiRankingOf(t *testing.T, venv, name, query string, docs []string) (ranking [][2]float64, tokens int) {
	t.Helper()
	in, err := json.Marshal(map[string]any{"query": query, "documents": docs})
	require.NoError(t, err)
	dir := filepath.Join("..", "testdata", "openvino", "tinyrerank")
	folder := filepath.Join("..", "testdata", "openvino", name, "model")
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), filepath.Join(dir, "genai_rerank.py"), folder)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var got struct {
		Results [][2]float64
		Tokens  []int
	}
	require.NoError(t, json.Unmarshal(out, &got))
	for _, n := range got.Tokens {
		tokens += n
	}
	return got.Results, tokens
}

type rerankResponse struct {
	Model   string
	Results []struct {
		Index          int
		RelevanceScore float64 `json:"relevance_score"`
		Document       *struct{ Text string }
	}
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
}

// Issue 40: a cross-encoder on the real OpenVINO core, through the
// daemon's API: listed with capabilities ["rerank"], its ranking at
// /v1/rerank and /rerank equal to TextRerankPipeline's (order and scores
// within 1e-5), top_n and return_documents honoured, the real token counts
// in usage; bad requests, an embedding model at /v1/rerank and a chat with
// the rerank model are 400s in OpenAI's error shape.
func TestOfficialRerankThroughTheAPI(t *testing.T) {
	venv, lib := officialCore(t)
	models := t.TempDir()
	for name, src := range map[string]string{"tinyrerank": "tinyrerank", "tinyembed": "tinyembed", "tinyqwen3rerank": "tinyqwen3rerank"} {
		require.NoError(t, os.CopyFS(filepath.Join(models, name), os.DirFS(filepath.Join("..", "testdata", "openvino", src, "model"))))
	}
	engine, err := openvino.New(openvino.Config{Library: lib, ModelsDir: models, Device: "CPU"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := daemontest.Start(t, daemontest.Defaults(t), engine)
	c := daemontest.NewClient(t, srv.URL)
	query := "Which runtime runs the model?"
	docs := []string{"OpenVINO runs the model on the NPU.", "a", "hello world", "Tools are functions a model may call."}
	want, tokens := genaiRanking(t, venv, query, docs)

	t.Run("show", func(t *testing.T) {
		resp, b := c.Do(t, "POST", "/api/show", `{"model":"tinyrerank"}`)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var show struct{ Capabilities []string }
		require.NoError(t, json.Unmarshal(b, &show))
		assert.Equal(t, []string{"rerank"}, show.Capabilities)
	})
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		t.Run(path, func(t *testing.T) {
			body, err := json.Marshal(map[string]any{"model": "tinyrerank", "query": query, "documents": docs})
			require.NoError(t, err)
			resp, b := c.Do(t, "POST", path, string(body))
			require.Equal(t, 200, resp.StatusCode, "%s", b)
			var got rerankResponse
			require.NoError(t, json.Unmarshal(b, &got))
			require.Len(t, got.Results, len(docs), "every document without top_n")
			for i, r := range got.Results {
				assert.Equal(t, int(want[i][0]), r.Index, "rank %d", i)
				assert.InDelta(t, want[i][1], r.RelevanceScore, 1e-5, "rank %d", i)
				assert.Nil(t, r.Document, "no document unless asked")
			}
			assert.Equal(t, tokens, got.Usage.PromptTokens, "the tokens of every pair")
			assert.Equal(t, tokens, got.Usage.TotalTokens)
			assert.Empty(t, resp.Header.Values("X-Npud-Truncated-Documents"), "no truncation asked for")
		})
	}
	t.Run("truncate", func(t *testing.T) {
		long := []string{longText, "a", strings.Repeat(" a", 200), "Tools are functions a model may call."}
		want, tokens := genaiRanking(t, venv, query, long)
		body, err := json.Marshal(map[string]any{"model": "tinyrerank", "query": query, "documents": long, "truncate": true})
		require.NoError(t, err)
		resp, b := c.Do(t, "POST", "/v1/rerank", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		assert.Equal(t, "2", resp.Header.Get("X-Npud-Truncated-Documents"), "two pairs were cut to the model's length")
		var got rerankResponse
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Results, len(long))
		for i, r := range got.Results {
			assert.Equal(t, int(want[i][0]), r.Index, "rank %d", i)
			assert.InDelta(t, want[i][1], r.RelevanceScore, 1e-5, "rank %d", i)
		}
		assert.Equal(t, tokens, got.Usage.PromptTokens, "the tokens the model was given, after truncation")

		// Without truncate the same request is a 400 that names it.
		body, err = json.Marshal(map[string]any{"model": "tinyrerank", "query": query, "documents": long})
		require.NoError(t, err)
		resp, b = c.Do(t, "POST", "/rerank", string(body))
		require.Equal(t, 400, resp.StatusCode, "%s", b)
		assert.Contains(t, string(b), "truncate")
		assert.Contains(t, string(b), "document 0")

		// Asked for, with nothing to cut: the header says 0.
		body, err = json.Marshal(map[string]any{"model": "tinyrerank", "query": query, "documents": docs, "truncate": true})
		require.NoError(t, err)
		resp, b = c.Do(t, "POST", "/rerank", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		assert.Equal(t, "0", resp.Header.Get("X-Npud-Truncated-Documents"))
	})
	t.Run("a Qwen3 reranker", func(t *testing.T) {
		// Raw query and documents: npud frames them with the Qwen3-Reranker
		// prompt, as GenAI's tests do before TextRerankPipeline.
		qdocs := []string{"OpenVINO runs the model on the NPU.", "a", "Tools are functions a model may call."}
		want, tokens := genaiRankingOf(t, venv, "tinyqwen3rerank", query, qdocs)
		body, err := json.Marshal(map[string]any{"model": "tinyqwen3rerank", "query": query, "documents": qdocs})
		require.NoError(t, err)
		resp, b := c.Do(t, "POST", "/v1/rerank", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var got rerankResponse
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Results, len(qdocs))
		for i, r := range got.Results {
			assert.Equal(t, int(want[i][0]), r.Index, "rank %d", i)
			assert.InDelta(t, want[i][1], r.RelevanceScore, 1e-5, "rank %d", i)
		}
		assert.Equal(t, tokens, got.Usage.PromptTokens, "the framed texts' tokens")
		resp, b = c.Do(t, "POST", "/api/show", `{"model":"tinyqwen3rerank"}`)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var show struct{ Capabilities []string }
		require.NoError(t, json.Unmarshal(b, &show))
		assert.Equal(t, []string{"rerank"}, show.Capabilities)
	})
	t.Run("top_n and return_documents", func(t *testing.T) {
		body, err := json.Marshal(map[string]any{"model": "tinyrerank", "query": query, "documents": docs, "top_n": 2, "return_documents": true})
		require.NoError(t, err)
		resp, b := c.Do(t, "POST", "/v1/rerank", string(body))
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		var got rerankResponse
		require.NoError(t, json.Unmarshal(b, &got))
		require.Len(t, got.Results, 2)
		for i, r := range got.Results {
			assert.Equal(t, int(want[i][0]), r.Index)
			require.NotNil(t, r.Document)
			assert.Equal(t, docs[r.Index], r.Document.Text)
		}
		assert.Equal(t, tokens, got.Usage.TotalTokens, "every document was scored")
	})
	for _, tc := range []struct{ name, path, body, param string }{
		{"no query", "/v1/rerank", `{"model":"tinyrerank","documents":["a"]}`, "query"},
		{"no documents", "/v1/rerank", `{"model":"tinyrerank","query":"q","documents":[]}`, "documents"},
		{"an empty document", "/v1/rerank", `{"model":"tinyrerank","query":"q","documents":["a",""]}`, "documents"},
		{"documents as objects", "/v1/rerank", `{"model":"tinyrerank","query":"q","documents":[{"text":"a"}]}`, "documents"},
		{"top_n 0", "/v1/rerank", `{"model":"tinyrerank","query":"q","documents":["a"],"top_n":0}`, "top_n"},
		{"an embedding model", "/v1/rerank", `{"model":"tinyembed","query":"q","documents":["a"]}`, "model"},
		{"a pair past the model's length", "/v1/rerank", `{"model":"tinyrerank","query":"q","documents":["` + longText + `"]}`, "documents"},
		{"chat with the rerank model", "/v1/chat/completions", `{"model":"tinyrerank","messages":[{"role":"user","content":"hi"}]}`, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := c.Do(t, "POST", tc.path, tc.body)
			require.Equal(t, 400, resp.StatusCode, "%s", b)
			var got struct {
				Error struct{ Message, Type, Param string }
			}
			require.NoError(t, json.Unmarshal(b, &got), "%s", b)
			assert.Equal(t, "invalid_request_error", got.Error.Type, "%s", b)
			assert.Equal(t, tc.param, got.Error.Param, "%s", b)
			assert.NotEmpty(t, got.Error.Message)
		})
	}
}

// longText is more than the tiny cross-encoder's 64 positions.
const longText = "The model here is tiny and its weights are random. The model here is tiny and its weights are random. " +
	"The model here is tiny and its weights are random. The model here is tiny and its weights are random."
