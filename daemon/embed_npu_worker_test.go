//go:build cgo

package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 40 item 2: under --device AUTO an embedding model and a
// cross-encoder go to the NPU in their worker processes (static shapes,
// every batch padded to 4 rows: ten texts and six documents take several
// inferences), answer what the CPU would (the test core's vectors and
// scores), /api/ps says NPU, and their compiles leave blobs in
// --cache-dir.
func TestEncoderModelsOnTheNPUInAWorker(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	models, cache := t.TempDir(), t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, models, "embed", 8)
	ovtestlib.WriteRerankModel(t, models, "rerank", 16)
	t.Setenv("OVTEST_DEVICES", "NPU,CPU")
	base := serveOpenVINO(t, "--isolation", "process", "--openvino-lib", lib, "--models-dir", models, "--cache-dir", cache, "--device", "AUTO")
	call := func(method, path, body string, into any) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.NoError(t, json.Unmarshal(b, into))
	}

	texts := []string{"the NPU", "one two three four five six seven eight nine ten", "a b", "c", "d e f", "g h i j",
		"k", "l m", "n o p", "q r s t u"}
	input, _ := json.Marshal(texts)
	var openai struct {
		Data  []struct{ Embedding []float32 }
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	// The second text is past the model's 8 tokens: cut, as the request allows.
	call(http.MethodPost, "/v1/embeddings", `{"model":"embed","truncate":true,"input":`+string(input)+`}`, &openai)
	require.Len(t, openai.Data, len(texts))
	tokens := 0
	for i, text := range texts {
		assert.InDeltaSlice(t, ovtestlib.Embedding(text, 8), openai.Data[i].Embedding, 1e-6, "input %d", i)
		tokens += min(len(ovtestlib.Tokens(text)), 8)
	}
	assert.Equal(t, tokens, openai.Usage.PromptTokens, "the real tokens, not the padding")

	docs := []string{"the NPU runs it", "a", "OpenVINO compiles the model once", "b c d", "cached blobs load fast", "e f"}
	body, _ := json.Marshal(map[string]any{"model": "rerank", "query": "which device", "documents": docs})
	var ranked struct {
		Results []struct {
			Index          int
			RelevanceScore float32 `json:"relevance_score"`
		}
	}
	call(http.MethodPost, "/v1/rerank", string(body), &ranked)
	require.Len(t, ranked.Results, len(docs))
	for _, r := range ranked.Results {
		assert.InDelta(t, ovtestlib.RerankScore("which device", docs[r.Index]), r.RelevanceScore, 1e-6, "document %d", r.Index)
	}

	var ps struct {
		Models []struct{ Name, Device string }
	}
	call(http.MethodGet, "/api/ps", "", &ps)
	require.Len(t, ps.Models, 2)
	for _, m := range ps.Models {
		assert.Equal(t, "NPU", m.Device, m.Name)
	}
	blobs, err := filepath.Glob(filepath.Join(cache, "*.blob"))
	require.NoError(t, err)
	assert.Len(t, blobs, 2, "each model's compile cached in --cache-dir")
}
