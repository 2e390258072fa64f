package nputest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
)

// RefusingRouter stands in for the router (npu/serve) in an API's tests:
// it serves one model, "local", and refuses every piece of work (a generation, an
// embedding, a transcription, a prompt's count) with Err, so each refusal an API must turn
// into its protocol's error is reached directly, with no daemon and no
// queue to fill. What is not work answers as an idle router with nothing
// loaded would.
type RefusingRouter struct {
	Err     error
	Retry   time.Duration // RetryAfter's answer
	started atomic.Int64
}

// Started is how many pieces of work reached the router for a served
// model (and were refused).
func (r *RefusingRouter) Started() int { return int(r.started.Load()) }

// refuse counts work for model and answers Err, or ErrModelNotFound for a
// model it does not serve, as the router does.
func (r *RefusingRouter) refuse(model string) error {
	if _, err := r.Model(model); err != nil {
		return err // an unknown model starts nothing
	}
	r.started.Add(1)
	return r.Err
}

func (r *RefusingRouter) Start(req *npu.Request) (npu.Stream, error) {
	return nil, r.refuse(req.Model)
}

func (r *RefusingRouter) CountPrompt(_ context.Context, req *npu.Request) (int, error) {
	return 0, r.refuse(req.Model)
}

func (r *RefusingRouter) Embed(_ context.Context, req npu.EmbedRequest) (npu.Embedded, error) {
	return npu.Embedded{}, r.refuse(req.Model)
}

func (r *RefusingRouter) Rerank(_ context.Context, req npu.RerankRequest) (npu.Reranked, error) {
	return npu.Reranked{}, r.refuse(req.Model)
}

func (r *RefusingRouter) Transcribe(_ context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	return npu.Transcript{}, r.refuse(req.Model)
}

func (r *RefusingRouter) Model(id string) (npu.ModelInfo, error) {
	if id != "local" {
		return npu.ModelInfo{}, fmt.Errorf("model %q: %w", id, npu.ErrModelNotFound)
	}
	return npu.ModelInfo{ID: "local", ContextLength: 4096}, nil
}

func (r *RefusingRouter) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "local", ContextLength: 4096}}
}
func (r *RefusingRouter) RetryAfter() time.Duration { return r.Retry }
func (r *RefusingRouter) Simulated() bool           { return false }
func (r *RefusingRouter) EngineName() string        { return "refusing" }
func (r *RefusingRouter) Waiting() int              { return 0 }

func (r *RefusingRouter) Pull(context.Context, string, func(npu.PullProgress)) error {
	return fmt.Errorf("the refusing router pulls nothing: %w", npu.ErrNotSupported)
}

func (r *RefusingRouter) Delete(_ context.Context, name string) error { return r.refuse(name) }
func (r *RefusingRouter) Copy(_ context.Context, source, _ string) error {
	return r.refuse(source)
}

func (r *RefusingRouter) LoadModel(_ context.Context, id string, _ *time.Duration) (time.Duration, error) {
	return 0, r.refuse(id)
}

func (r *RefusingRouter) UnloadModel(_ context.Context, id string) error { return r.refuse(id) }
func (r *RefusingRouter) Loaded() []npu.LoadedModel                      { return nil }
func (r *RefusingRouter) Loading() []npu.LoadStatus                      { return nil }
func (r *RefusingRouter) Preloaded(string) bool                          { return false }
func (r *RefusingRouter) DeviceOf(string) string                         { return "" }
func (r *RefusingRouter) Restarts(string) int                            { return 0 }
func (r *RefusingRouter) Wait(context.Context) error                     { return nil }
func (r *RefusingRouter) Abort()                                         {}
