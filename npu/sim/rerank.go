package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/npud/npud/npu"
)

// Rerank implements npu.Reranker with made-up scores: (1 + the cosine of
// the simulated embeddings of query and document) / 2, deterministic and
// meaningless, best first. They let clients and tests exercise the rerank
// endpoints and the worker's rerank job; they carry no semantics. A pair
// of more tokens than the simulated model's context is refused, or with
// truncate counted as truncated to the context (its score still from the
// whole texts).
func (e *Engine) Rerank(ctx context.Context, model, query string, documents []string, truncate bool) (npu.Reranked, error) {
	if err := ctx.Err(); err != nil {
		return npu.Reranked{}, err
	}
	q := Embedding(query)
	queryTokens := CountTokens(query)
	out := make([]npu.RerankResult, len(documents))
	tokens, truncated := 0, 0
	for i, doc := range documents {
		pair := queryTokens + CountTokens(doc)
		if pair > e.cfg.ContextLength {
			if !truncate {
				return npu.Reranked{}, &npu.InvalidRequestError{Param: "documents", Message: fmt.Sprintf(
					"document %d with the query is %d tokens, more than the model's %d: shorten it, or set truncate to true", i, pair, e.cfg.ContextLength)}
			}
			pair = e.cfg.ContextLength
			truncated++
		}
		var dot float64
		for j, x := range Embedding(doc) {
			dot += float64(x) * float64(q[j])
		}
		out[i] = npu.RerankResult{Index: i, Score: float32((1 + dot) / 2)}
		tokens += pair
	}
	slices.SortStableFunc(out, func(a, b npu.RerankResult) int { return cmp.Compare(b.Score, a.Score) })
	return npu.Reranked{Results: out, PromptTokens: tokens, Truncated: truncated}, nil
}
