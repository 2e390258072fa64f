package serve

import (
	"context"
	"fmt"

	"github.com/npud/npud/npu"
)

// Rerank scores req's documents against its query with its model,
// admitted and run as Embed is (its tenant's stream cap, the engine's
// slot, the model's lifecycle). Engines that cannot rerank give an error
// wrapping ErrNotSupported.
func (r *Router) Rerank(ctx context.Context, req npu.RerankRequest) (npu.Reranked, error) {
	if r.closing.Load() {
		return npu.Reranked{}, npu.ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	if err != nil {
		return npu.Reranked{}, err
	}
	reranker, ok := res.pool.engine.(npu.Reranker)
	if !ok || !res.pool.engine.Describe().Reranks {
		return npu.Reranked{}, fmt.Errorf("model %q does not support rerank: %w", req.Model, npu.ErrNotSupported)
	}
	release, err := r.admit(req.Tenant)
	if err != nil {
		return npu.Reranked{}, err
	}
	defer release()
	return res.pool.rerank(ctx, reranker, res.model, req)
}

// rerank runs a rerank on m, the model held through the lifecycle as for
// an embedding (Pool.embed).
func (p *Pool) rerank(ctx context.Context, reranker npu.Reranker, m npu.ModelInfo, req npu.RerankRequest) (out npu.Reranked, err error) {
	release, err := p.holdFor(ctx, m, req.KeepAlive, req.MayUnpin)
	if err != nil {
		return npu.Reranked{}, err
	}
	defer release()
	err = p.withSlot(ctx, func() error {
		return p.resident(m.ID,
			func() error {
				out, err = reranker.Rerank(ctx, m.ID, req.Query, req.Documents, req.Truncate)
				return err
			},
			func() error { return p.reacquireFor(ctx, m) })
	})
	return out, err
}
