package bench_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli/bench"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// Issue 40: the embeddings load sends a fixed set of inputs to
// /v1/embeddings in batches and counts the inputs and the server's tokens.
func TestBenchEmbeddings(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	tokensOf := func(texts []string) int {
		n := 0
		for _, s := range texts {
			n += sim.CountTokens(s)
		}
		return n
	}
	inputs := bench.Inputs(10, 6, 7)
	for _, tc := range []struct {
		name        string
		concurrency int
		requests    int
		wantInputs  int // texts embedded in all
		wantTokens  int // the simulated engine's count of them
	}{
		{"one pass, one client", 1, 3, 10, tokensOf(inputs)},
		{"one pass, three clients", 3, 3, 10, tokensOf(inputs)},
		// Requests cycle through the batches: 4, 4, 2, 4, 4, 2, 4 texts.
		{"more requests than batches", 2, 7, 24, 2*tokensOf(inputs) + tokensOf(inputs[:4])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Endpoint: bench.EndpointEmbeddings,
				Concurrency: tc.concurrency, Requests: tc.requests, Inputs: 10, Batch: 4, PromptTokens: 6, Seed: 7}
			done := 0
			samples, elapsed, err := bench.Run(t.Context(), cfg, func(n int) { done = max(done, n) })
			require.NoError(t, err)
			require.Len(t, samples, tc.requests)
			assert.Equal(t, tc.requests, done)
			r := bench.Summarise(cfg, samples, elapsed)
			assert.Equal(t, tc.requests, r.Succeeded, "%v", r.Errors)
			assert.Equal(t, tc.wantInputs, r.InputsEmbedded)
			assert.Equal(t, tc.wantTokens, r.InputTokens, "the server's usage.prompt_tokens of exactly these inputs")
			assert.InDelta(t, float64(tc.wantInputs)/elapsed.Seconds(), r.InputsPerS, 1e-9)
			assert.InDelta(t, float64(tc.wantTokens)/elapsed.Seconds(), r.InputTokensPerS, 1e-9)
			assert.Equal(t, tc.requests, r.EndToEnd.Count)
			assert.Positive(t, r.EndToEnd.P50)
			assert.Zero(t, r.OutputTokens)
			var b strings.Builder
			r.WriteTable(&b)
			assert.Contains(t, b.String(), "/v1/embeddings  concurrency")
			assert.Contains(t, b.String(), "inputs/s")
			assert.NotContains(t, b.String(), "TTFT", "an embedding has no first token")
			js, err := json.Marshal(r)
			require.NoError(t, err)
			assert.Contains(t, string(js), `"inputs_per_second":`)
			assert.Contains(t, string(js), `"endpoint":"embeddings"`)
		})
	}
}

func TestBenchEmbeddingsRefusals(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.MaxEmbedInputs = 16 }, nil)
	base := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Endpoint: bench.EndpointEmbeddings,
		Concurrency: 1, Requests: 1, Inputs: 3, Batch: 3, PromptTokens: 4, Seed: 1}
	for _, tc := range []struct {
		name    string
		mutate  func(*bench.Config)
		runErr  string // the run refused
		errKind string // else: every request failed with this kind
	}{
		{"ollama API", func(c *bench.Config) { c.API = "ollama" }, "needs --api openai", ""},
		{"no batch", func(c *bench.Config) { c.Batch = 0 }, "--batch > 0", ""},
		{"no inputs", func(c *bench.Config) { c.Inputs = 0 }, "--inputs > 0", ""},
		{"unknown endpoint", func(c *bench.Config) { c.Endpoint = "rerank" }, `--endpoint "rerank"`, ""},
		{"unknown model", func(c *bench.Config) { c.Model = "missing" }, "", "http_404"},
		{"a batch over the server's bound", func(c *bench.Config) { c.Inputs, c.Batch = 20, 20 }, "", "http_400"},
		{"no server", func(c *bench.Config) { c.URL = "http://127.0.0.1:1" }, "", "connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mutate(&cfg)
			samples, _, err := bench.Run(t.Context(), cfg, nil)
			if tc.runErr != "" {
				assert.ErrorContains(t, err, tc.runErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, samples, 1)
			assert.Equal(t, tc.errKind, samples[0].Err)
		})
	}
}

func TestBenchEmbeddingsDuration(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	cfg := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Endpoint: bench.EndpointEmbeddings,
		Concurrency: 2, Duration: 200 * time.Millisecond, Inputs: 8, Batch: 4, PromptTokens: 4, Seed: 1}
	samples, elapsed, err := bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.NotEmpty(t, samples)
	for _, s := range samples {
		assert.Empty(t, s.Err, "requests cut by the end of the run are not counted as failures")
	}
	r := bench.Summarise(cfg, samples, elapsed)
	assert.Equal(t, 4*len(samples), r.InputsEmbedded)
}

func TestInputs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		count, words int
		seed         uint64
	}{
		{"several", 5, 12, 1},
		{"one word", 3, 1, 2},
		{"no words asked: one", 2, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := bench.Inputs(tc.count, tc.words, tc.seed)
			require.Len(t, a, tc.count)
			assert.Equal(t, a, bench.Inputs(tc.count, tc.words, tc.seed), "the same for the same seed")
			assert.NotEqual(t, a, bench.Inputs(tc.count, tc.words, tc.seed+1), "another seed, other texts")
			for _, text := range a {
				assert.Len(t, strings.Fields(text), max(tc.words, 1))
			}
		})
	}
}

// The Python benchmark of GenAI's TextEmbeddingPipeline embeds the same
// texts as an embeddings run: its generator is the same as Inputs.
func TestInputsMatchPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script, err := filepath.Abs("../../testdata/openvino/tinyembed/genai_embed_bench.py")
	require.NoError(t, err)
	require.FileExists(t, script)
	for _, tc := range []struct {
		count, words int
		seed         uint64
	}{{7, 16, 1}, {3, 1, 0}, {4, 40, 1 << 63}} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, python, script, "--print-inputs", "--inputs", strconv.Itoa(tc.count),
			"--words", strconv.Itoa(tc.words), "--seed", strconv.FormatUint(tc.seed, 10))
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.Output()
		cancel()
		require.NoError(t, err)
		var texts []string
		require.NoError(t, json.Unmarshal(out, &texts))
		assert.Equal(t, bench.Inputs(tc.count, tc.words, tc.seed), texts, "seed %d", tc.seed)
	}
}
