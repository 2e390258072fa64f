package serve

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// transcribingEngine is a fakeEngine that transcribes: each call waits on
// release after saying it entered.
type transcribingEngine struct {
	fakeEngine
	entered chan struct{}
	release chan struct{}
}

func (e *transcribingEngine) Describe() npu.Features { return npu.Features{Transcribes: true} }

func (e *transcribingEngine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	e.entered <- struct{}{}
	select {
	case <-e.release:
	case <-ctx.Done():
		return npu.Transcript{}, ctx.Err()
	}
	return npu.Transcript{Text: req.Model + " heard", Segments: []npu.Segment{{End: req.Seconds(), Text: "heard"}}}, nil
}

func TestRouterTranscribeRefuses(t *testing.T) {
	ctx := context.Background()
	audio := func(model string) *npu.TranscribeRequest {
		return &npu.TranscribeRequest{Model: model, Samples: make([]float32, npu.AudioSampleRate), Task: npu.TaskTranscribe}
	}
	plain := newTestRouter(t, &fakeEngine{details: npu.ModelDetails{Speech: true}}, PoolConfig{MaxQueue: 4})
	_, err := plain.Transcribe(ctx, audio("m"))
	require.ErrorIs(t, err, npu.ErrNotSupported, "an engine without a transcriber")
	_, err = plain.Transcribe(ctx, audio("other"))
	require.ErrorIs(t, err, npu.ErrModelNotFound)

	deaf := newTestRouter(t, &transcribingEngine{}, PoolConfig{MaxQueue: 4})
	_, err = deaf.Transcribe(ctx, audio("m"))
	var invalid *npu.InvalidRequestError
	require.True(t, errors.As(err, &invalid), "a model that cannot hear: %v", err)
	assert.Equal(t, "model", invalid.Param)
}

// A transcription holds the engine's one slot: while it runs, the next
// waits in the queue, and with no room there it is refused at once.
func TestRouterTranscribeTakesTheSlot(t *testing.T) {
	e := &transcribingEngine{fakeEngine: fakeEngine{details: npu.ModelDetails{Speech: true}},
		entered: make(chan struct{}, 2), release: make(chan struct{})}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 0})
	ctx := context.Background()
	type result struct {
		t   npu.Transcript
		err error
	}
	first := make(chan result, 1)
	go func() {
		tr, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "m", Samples: make([]float32, 2*npu.AudioSampleRate)})
		first <- result{tr, err}
	}()
	<-e.entered
	_, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "m", Samples: make([]float32, 1)})
	require.ErrorIs(t, err, npu.ErrQueueFull)
	_, err = r.Start(&npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "hi"}}})
	require.ErrorIs(t, err, npu.ErrQueueFull, "a generation waits behind a transcription too")
	close(e.release)
	got := <-first
	require.NoError(t, got.err)
	assert.Equal(t, "m heard", got.t.Text)
	assert.InDelta(t, 2, got.t.Segments[0].End, 1e-9)
}
