package sim

import (
	"cmp"
	"context"
	"slices"

	"github.com/npud/npud/npu"
)

// Rerank implements npu.Reranker with made-up scores: (1 + the cosine of
// the simulated embeddings of query and document) / 2, deterministic and
// meaningless, best first. They let clients and tests exercise the rerank
// endpoints and the worker's rerank job; they carry no semantics.
func (e *Engine) Rerank(ctx context.Context, model, query string, documents []string) ([]npu.RerankResult, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	q := Embedding(query)
	queryTokens := CountTokens(query)
	out := make([]npu.RerankResult, len(documents))
	tokens := 0
	for i, doc := range documents {
		var dot float64
		for j, x := range Embedding(doc) {
			dot += float64(x) * float64(q[j])
		}
		out[i] = npu.RerankResult{Index: i, Score: float32((1 + dot) / 2)}
		tokens += queryTokens + CountTokens(doc)
	}
	slices.SortStableFunc(out, func(a, b npu.RerankResult) int { return cmp.Compare(b.Score, a.Score) })
	return out, tokens, nil
}
