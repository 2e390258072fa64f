package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/npud/npud/npu"
)

// CountPrompt counts req's prompt as a generation of req would prefill it
// (Anthropic's count_tokens): the model resolved as for a generation (an
// alias, the local engine; tools narrowed by the tool choice, the same
// capability checks), the work admitted against its tenant's stream cap,
// the model loaded through the lifecycle as a generation loads it (on
// demand, its keep-alive started again after), and the engine's
// CountPrompt called without a generation slot: counting runs beside the
// model's generations, never queued behind them. ctx bounds the load and
// the count.
//
// A model the local engine does not count answers an error wrapping
// npu.ErrPromptNotCounted, before anything is loaded: one an upstream
// serves, one whose prompts GenAI renders (ModelDetails.PromptRenderer),
// or any of an engine that counts no prompts.
func (r *Router) CountPrompt(ctx context.Context, req *npu.Request) (int, error) {
	if r.closing.Load() {
		return 0, npu.ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	switch {
	case err != nil:
		return 0, err
	case res.upstream != nil:
		return 0, fmt.Errorf("model %q is served by upstream %s: %w", req.Model, res.upstream.Name, npu.ErrPromptNotCounted)
	case !res.pool.engine.Describe().ExactCounts:
		return 0, fmt.Errorf("model %q: engine %s counts no prompts: %w", req.Model, res.pool.engine.Name(), npu.ErrPromptNotCounted)
	case res.model.Details.GenAIRendersPrompts():
		return 0, fmt.Errorf("model %q: GenAI renders its prompts from its chat template: %w", req.Model, npu.ErrPromptNotCounted)
	}
	req.Model = res.model.ID // an alias names the model the engine knows
	if err := fitRequest(req, res.model); err != nil {
		return 0, err
	}
	req.Normalize()
	release, err := r.admit(req.Tenant)
	if err != nil {
		return 0, err
	}
	defer release()
	return res.pool.countPrompt(ctx, req, res.model)
}

// countPrompt counts req's prompt on m, acquired through the lifecycle as
// a generation acquires it (run), so /api/ps, keep-alive and the cap on
// loaded models see the count as they see a generation; no engine slot is
// taken. A model found gone before the count started is loaded again and
// counted once more.
func (p *Pool) countPrompt(ctx context.Context, req *npu.Request, m npu.ModelInfo) (n int, err error) {
	if p.closing.Load() {
		return 0, npu.ErrShuttingDown
	}
	if _, err := p.life.acquire(ctx, m); err != nil {
		return 0, err
	}
	defer p.life.release(m.ID, req.KeepAlive, req.MayUnpin)
	err = p.resident(m.ID,
		func() error {
			n, err = p.engine.CountPrompt(ctx, req)
			return err
		},
		func() error {
			_, err := p.reacquire(m.ID, func() (time.Duration, error) { return p.life.acquire(ctx, m) })
			return err
		})
	return n, err
}
