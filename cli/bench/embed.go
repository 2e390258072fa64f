package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoints npud bench drives.
const (
	EndpointChat       = "chat"       // streaming generation: /v1/chat/completions or /api/generate
	EndpointEmbeddings = "embeddings" // OpenAI /v1/embeddings
)

// inputWords are the words the embedding inputs are made of. The list and
// Inputs' generator are also in testdata/openvino/tinyembed/genai_embed_bench.py,
// which embeds the same inputs with GenAI's TextEmbeddingPipeline; its
// --print-inputs output is checked against Inputs (TestInputsMatchPython).
var inputWords = [...]string{
	"the", "model", "runs", "on", "a", "small", "device", "with", "quiet", "power",
	"every", "request", "brings", "text", "to", "embed", "and", "search", "finds", "near",
	"vectors", "in", "an", "index", "of", "documents", "that", "people", "wrote", "about",
	"rivers", "cities", "music", "code", "weather", "trains", "gardens", "history", "light", "stone",
	"green", "fast", "old", "new", "long", "short", "bright", "dark", "warm", "cold",
	"reads", "writes", "keeps", "sends", "counts", "moves", "holds", "opens", "turns", "grows",
	"north", "south", "river", "bridge",
}

// splitmix64 is the generator of Inputs: small, and the same in Python.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Inputs are the texts of an embeddings run: count texts of words words
// each, drawn from a fixed list with a generator seeded by seed, so that
// another program can embed exactly the same texts.
func Inputs(count, words int, seed uint64) []string {
	rng := splitmix64(seed)
	out := make([]string, count)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for w := range max(words, 1) {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(inputWords[rng.next()%uint64(len(inputWords))])
		}
		out[i] = b.String()
	}
	return out
}

// embeddingBatch is one request's body and the inputs in it.
type embeddingBatch struct {
	body   []byte
	inputs int
}

// embeddingBatches splits the inputs into requests of cfg.Batch texts each
// (the last may be shorter): request k of a run carries batch k mod their
// number, so a run of one pass sends every input once, in order.
func embeddingBatches(cfg Config) []embeddingBatch {
	inputs := Inputs(cfg.Inputs, cfg.PromptTokens, cfg.Seed)
	var batches []embeddingBatch
	for start := 0; start < len(inputs); start += cfg.Batch {
		chunk := inputs[start:min(start+cfg.Batch, len(inputs))]
		b, _ := json.Marshal(map[string]any{"model": cfg.Model, "encoding_format": "float", "input": chunk})
		batches = append(batches, embeddingBatch{body: b, inputs: len(chunk)})
	}
	return batches
}

// runEmbeddings drives /v1/embeddings: cfg.Concurrency clients send the
// batches of the fixed inputs in turn, cfg.Requests requests in all (or
// for cfg.Duration).
func runEmbeddings(ctx context.Context, cfg Config, progress func(done int)) ([]Sample, time.Duration, error) {
	if cfg.API != "openai" {
		return nil, 0, fmt.Errorf("--endpoint embeddings needs --api openai (/v1/embeddings), got %q", cfg.API)
	}
	if cfg.Inputs <= 0 || cfg.Batch <= 0 {
		return nil, 0, errors.New("--endpoint embeddings needs --inputs > 0 and --batch > 0")
	}
	client, closeIdle := httpClient(cfg)
	defer closeIdle()
	batches := embeddingBatches(cfg)
	runCtx, cancel := runContext(ctx, cfg)
	defer cancel()
	var (
		issued atomic.Int64
		got    = samples{progress: progress}
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range cfg.Concurrency {
		wg.Go(func() {
			for runCtx.Err() == nil {
				k := issued.Add(1) - 1
				if cfg.Requests > 0 && k >= int64(cfg.Requests) {
					return
				}
				s := embedOne(runCtx, client, cfg, batches[k%int64(len(batches))])
				if cfg.Requests == 0 && runCtx.Err() != nil && s.Err != "" {
					return // cut by the end of the run, not a failure
				}
				got.add(s)
			}
		})
	}
	wg.Wait()
	return got.list, time.Since(start), ctx.Err()
}

// embeddingsResponse is what an embeddings run reads of an answer.
type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// embedOne sends one embeddings request and measures it: E2E, the inputs
// embedded and the server's count of their tokens.
func embedOne(ctx context.Context, client *http.Client, cfg Config, batch embeddingBatch) Sample {
	ctx, cancel := requestContext(ctx, cfg)
	defer cancel()
	resp, sent, failed := post(ctx, client, cfg, "/v1/embeddings", batch.body)
	if resp == nil {
		return failed
	}
	defer resp.Body.Close()
	var out embeddingsResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		if ctx.Err() != nil {
			return Sample{Err: "timeout"}
		}
		return Sample{Err: "bad_response"}
	}
	s := Sample{E2E: time.Since(sent), Inputs: len(out.Data), Prompt: out.Usage.PromptTokens}
	if len(out.Data) != batch.inputs {
		s.Err = "wrong_count" // a vector for every input, or the run means nothing
	}
	for i, d := range out.Data {
		if d.Index != i || len(d.Embedding) == 0 {
			s.Err = "bad_response"
		}
	}
	return s
}

// writeEmbeddingsTable writes an embeddings run's report for people.
func (r Report) writeEmbeddingsTable(w io.Writer) {
	fmt.Fprintf(w, "%s %s/v1/embeddings  concurrency %d  batch %d  inputs of ~%d words\n", r.API, strings.TrimRight(r.URL, "/"), r.Concurrency, r.Batch, r.PromptTokens)
	r.writeOutcomes(w)
	fmt.Fprintf(w, "\n%.1f s  %.2f req/s  %.2f inputs/s  %.1f input tokens/s  (%d inputs, %d tokens)\n\n",
		r.Seconds, r.RequestsPerS, r.InputsPerS, r.InputTokensPerS, r.InputsEmbedded, r.InputTokens)
	fmt.Fprintf(w, "%-6s %10s %10s %10s %10s %10s %8s\n", "ms", "p50", "p90", "p99", "max", "mean", "n")
	s := r.EndToEnd
	fmt.Fprintf(w, "%-6s %10.2f %10.2f %10.2f %10.2f %10.2f %8d\n", "E2E", s.P50, s.P90, s.P99, s.Max, s.Mean, s.Count)
}
