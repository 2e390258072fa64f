package npu

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transcribingEngine is a fakeEngine that transcribes: each call waits on
// release after saying it entered.
type transcribingEngine struct {
	fakeEngine
	entered chan struct{}
	release chan struct{}
}

func (e *transcribingEngine) Describe() Features { return Features{Transcribes: true} }

func (e *transcribingEngine) Transcribe(ctx context.Context, req *TranscribeRequest) (Transcript, error) {
	e.entered <- struct{}{}
	select {
	case <-e.release:
	case <-ctx.Done():
		return Transcript{}, ctx.Err()
	}
	return Transcript{Text: req.Model + " heard", Segments: []Segment{{End: req.Seconds(), Text: "heard"}}}, nil
}

func TestRunnerTranscribeRefuses(t *testing.T) {
	ctx := context.Background()
	audio := func(model string) *TranscribeRequest {
		return &TranscribeRequest{Model: model, Samples: make([]float32, AudioSampleRate), Task: TaskTranscribe}
	}
	plain := newTestRouter(t, &fakeEngine{details: ModelDetails{Speech: true}}, PoolConfig{MaxQueue: 4})
	_, err := plain.Transcribe(ctx, audio("m"))
	require.ErrorIs(t, err, ErrNotSupported, "an engine without a transcriber")
	_, err = plain.Transcribe(ctx, audio("other"))
	require.ErrorIs(t, err, ErrModelNotFound)

	deaf := newTestRouter(t, &transcribingEngine{}, PoolConfig{MaxQueue: 4})
	_, err = deaf.Transcribe(ctx, audio("m"))
	var invalid *InvalidRequestError
	require.True(t, errors.As(err, &invalid), "a model that cannot hear: %v", err)
	assert.Equal(t, "model", invalid.Param)
}

// A transcription holds the engine's one slot: while it runs, the next
// waits in the queue, and with no room there it is refused at once.
func TestRunnerTranscribeTakesTheSlot(t *testing.T) {
	e := &transcribingEngine{fakeEngine: fakeEngine{details: ModelDetails{Speech: true}},
		entered: make(chan struct{}, 2), release: make(chan struct{})}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 0})
	ctx := context.Background()
	type result struct {
		t   Transcript
		err error
	}
	first := make(chan result, 1)
	go func() {
		tr, err := r.Transcribe(ctx, &TranscribeRequest{Model: "m", Samples: make([]float32, 2*AudioSampleRate)})
		first <- result{tr, err}
	}()
	<-e.entered
	_, err := r.Transcribe(ctx, &TranscribeRequest{Model: "m", Samples: make([]float32, 1)})
	require.ErrorIs(t, err, ErrQueueFull)
	_, err = r.Start(&Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
	require.ErrorIs(t, err, ErrQueueFull, "a generation waits behind a transcription too")
	close(e.release)
	got := <-first
	require.NoError(t, got.err)
	assert.Equal(t, "m heard", got.t.Text)
	assert.InDelta(t, 2, got.t.Segments[0].End, 1e-9)
}
