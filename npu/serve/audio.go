package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/npud/npud/npu"
)

// Transcribe runs req, admitted against its tenant's stream cap, while
// holding the engine's slot, through the same queue, limits and
// Retry-After as generations, on the model loaded through the lifecycle
// like a generation's. Engines that cannot transcribe give an error
// wrapping ErrNotSupported; models that cannot hear give an
// InvalidRequestError.
func (r *Router) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	if r.closing.Load() {
		return npu.Transcript{}, npu.ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	if err != nil {
		return npu.Transcript{}, err
	}
	if res.upstream != nil {
		return npu.Transcript{}, fmt.Errorf("model %q is served by an upstream; transcription is not relayed to upstreams yet: %w", req.Model, npu.ErrNotSupported)
	}
	if !res.pool.engine.Describe().Transcribes {
		return npu.Transcript{}, fmt.Errorf("engine %s does not transcribe audio: %w", res.pool.engine.Name(), npu.ErrNotSupported)
	}
	if err := npu.CheckSpeech(res.model); err != nil {
		return npu.Transcript{}, err
	}
	release, err := r.admit(req.Tenant)
	if err != nil {
		return npu.Transcript{}, err
	}
	defer release()
	req.Model = res.model.ID // an alias names the model the engine knows
	return res.pool.transcribe(ctx, req, res.model)
}

// transcribe runs req on m. The model is loaded outside the engine's slot,
// as for a generation (a compile must not hold up other models' streams),
// and kept loaded until the transcription ends; then its keep-alive starts.
func (p *Pool) transcribe(ctx context.Context, req *npu.TranscribeRequest, m npu.ModelInfo) (npu.Transcript, error) {
	release, err := p.hold(ctx, m)
	if err != nil {
		return npu.Transcript{}, err
	}
	defer release()
	var (
		out  npu.Transcript
		took time.Duration
		ran  bool
	)
	err = p.withSlot(ctx, func() error {
		ran = true
		start := time.Now()
		var err error
		out, err = p.transcribeResident(ctx, m, req)
		took = time.Since(start)
		return err
	})
	if ran {
		p.cfg.Observer.TranscriptionEnded(npu.TranscriptionReport{Model: m.ID, Device: p.deviceOf(m.ID), Task: req.Task,
			AudioSeconds: req.Seconds(), Took: took, Err: err})
	}
	return out, err
}
