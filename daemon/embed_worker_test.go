//go:build cgo

package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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
	cfg, err := ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "openvino", "--isolation", "process",
		"--openvino-lib", lib, "--models-dir", models, "--cache-dir", "", "--device", "CPU"}, env(), io.Discard)
	require.NoError(t, err)
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	base := "http://" + srv.Addr().String()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	post := func(path, body string, into any) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.NoError(t, json.Unmarshal(b, into))
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
	post("/v1/embeddings", `{"model":"embed","input":["the NPU","one two three four five six seven eight nine ten"]}`, &openai)
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
