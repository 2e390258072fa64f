package serve

import (
	"context"
	"errors"
	"time"

	"github.com/npud/npud/npu"
)

// Residency (which models are in memory) is the lifecycle's to say, and
// only its. An engine that loses a model on its own, such as a worker
// process that died (npu/worker), does not load it again behind the
// lifecycle's back: it reports the loss with an error wrapping
// ErrModelLost, and the helpers here tell the lifecycle, which forgets
// the model. The next acquire loads it again like any load: /api/ps lists
// it as loading, the heartbeats of the requests waiting for it say how the
// load goes, the load metrics count it, and keep-alive and the
// loaded-model cap see it.
//
// A job that found its model gone before it started (the worker died
// idle) ran nothing and sent its client nothing, so it runs once more on
// the model loaded again. A job the loss ended (a crash or a hang during
// it) ends with that error, and the next request loads the model.

// diedIdle reports whether err says the model was found gone before the
// job started: lost, and of no other class (a crash or a hang during the
// job keeps its own).
func diedIdle(err error) bool {
	return errors.Is(err, npu.ErrModelLost) && npu.ErrorCode(err) == npu.CodeModelLost
}

// forgetIfLost tells the lifecycle when err says the engine lost model
// during a job that started at since.
func (p *Pool) forgetIfLost(model string, since time.Time, err error) {
	if errors.Is(err, npu.ErrModelLost) {
		p.life.lost(model, since)
	}
}

// resident runs job, which uses model on the engine; when the engine
// found model gone before job started, reload loads it again and job runs
// once more. The engine's losses are told to the lifecycle.
func (p *Pool) resident(model string, job func() error, reload func() error) error {
	started := time.Now()
	err := job()
	p.forgetIfLost(model, started, err)
	if !diedIdle(err) {
		return err
	}
	if err := reload(); err != nil {
		return err
	}
	started = time.Now()
	err = job()
	p.forgetIfLost(model, started, err)
	return err
}

// reacquire loads model again for a caller that held a use of the
// instance the engine lost: the use of the new one takes its place, and
// the caller's release ends it. On failure the caller still holds (and
// releases) the orphaned use.
func (p *Pool) reacquire(model string, acquire func() (time.Duration, error)) (time.Duration, error) {
	took, err := acquire()
	if err != nil {
		return 0, err
	}
	p.life.release(model, nil, false) // the use of the lost instance
	return took, nil
}

// generateResident is run's generation (model acquired, the engine slot
// held). A model found gone before the generation started is loaded again
// in the slot, the stream's heartbeats showing the load, whose time adds
// to loadTime; the generation then starts anew.
func (p *Pool) generateResident(s *Stream, model npu.ModelInfo, loadTime *time.Duration) (res npu.Result, err error) {
	err = p.resident(model.ID,
		func() error {
			res, err = p.generate(s)
			return err
		},
		func() error {
			s.requeue()
			took, err := p.reacquire(model.ID, func() (time.Duration, error) { return p.acquireShowingLoad(s, model) })
			if err == nil {
				*loadTime += took
				s.begin(p.deviceOf(model.ID))
			}
			return err
		})
	return res, err
}

// embedResident is Embed's call of the engine (model acquired, the engine
// slot held), run once more on the model loaded again if it was found gone.
func (p *Pool) embedResident(ctx context.Context, model npu.ModelInfo, inputs []string, truncate bool) (out npu.Embedded, err error) {
	err = p.resident(model.ID,
		func() error {
			out, err = p.engine.Embed(ctx, model.ID, inputs, truncate)
			return err
		},
		func() error { return p.reacquireFor(ctx, model) })
	return out, err
}

// transcribeResident is Transcribe's call of the engine (model acquired,
// the engine slot held), run once more on the model loaded again if it was
// found gone.
func (p *Pool) transcribeResident(ctx context.Context, model npu.ModelInfo, req *npu.TranscribeRequest) (out npu.Transcript, err error) {
	err = p.resident(model.ID,
		func() error {
			out, err = p.engine.Transcribe(ctx, req)
			return err
		},
		func() error { return p.reacquireFor(ctx, model) })
	return out, err
}

// reloadResident is ReloadModel's reload (the engine slot held): a model
// the engine lost is forgotten, and the reload loads it anew.
func (p *Pool) reloadResident(ctx context.Context, model npu.ModelInfo) error {
	return p.resident(model.ID,
		func() error { return p.life.reload(ctx, model) },
		func() error { return nil }) // reload finds it not loaded, and loads it
}

// reacquireFor is reacquire for a call without a stream (an embedding, a
// transcription), which acquired the model through the lifecycle only if
// the engine loads models.
func (p *Pool) reacquireFor(ctx context.Context, model npu.ModelInfo) error {
	if !p.engine.Describe().LoadsModels {
		return nil
	}
	_, err := p.reacquire(model.ID, func() (time.Duration, error) { return p.life.acquire(ctx, model) })
	return err
}

// requeue puts s back in the phase before the engine starts on it, while
// its model loads again: no token timeout or deadline runs during the load
// (a compile takes minutes on an NPU), and begin starts them anew.
func (s *Stream) requeue() {
	s.mu.Lock()
	s.started = time.Time{}
	s.mu.Unlock()
	s.signal()
}
