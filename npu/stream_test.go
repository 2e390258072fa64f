package npu

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scriptedEngine plays chunks from its own goroutine, like a native
// streamer thread, and records every answer the sink gave.
type scriptedEngine struct {
	chunks     []string
	gap        time.Duration // before every chunk after the first
	stallAfter int           // > 0: after that many chunks, block until ctx ends
	failAfter  int           // > 0: after that many chunks, return an error
	flush      string        // sent once more after Stop/Cancel, as OpenVINO does
	panics     bool

	mu       sync.Mutex
	statuses []Status
	emitted  int // chunks sent before the generation ended, flush excluded
	calls    int
}

func (e *scriptedEngine) Name() string    { return "scripted" }
func (e *scriptedEngine) Simulated() bool { return true }
func (e *scriptedEngine) Models() []ModelInfo {
	return []ModelInfo{{ID: "m", ContextLength: 1000}}
}

func (e *scriptedEngine) Generate(ctx context.Context, req *Request, sink Sink) (Result, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	if e.panics {
		panic("scripted engine panics")
	}
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res := Result{FinishReason: FinishStop, PromptTokens: 3}
		for i, c := range e.chunks {
			if i > 0 {
				time.Sleep(e.gap)
			}
			if e.stallAfter > 0 && i == e.stallAfter {
				<-ctx.Done()
			}
			if e.failAfter > 0 && i == e.failAfter {
				done <- outcome{res, &EngineError{Engine: "scripted", Cause: errors.New("device lost")}}
				return
			}
			st := sink(c)
			e.mu.Lock()
			e.statuses = append(e.statuses, st)
			e.emitted++
			e.mu.Unlock()
			res.CompletionTokens++
			if st != Running {
				sink(e.flush) // the answer is ignored, as OpenVINO ignores it
				done <- outcome{res, nil}
				return
			}
		}
		done <- outcome{res, nil}
	}()
	o := <-done
	return o.res, o.err
}

func (e *scriptedEngine) seen() (statuses []Status, emitted int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Status(nil), e.statuses...), e.emitted
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

var testLimits = StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second}

func newTestRunner(t *testing.T, e Engine, cfg RunnerConfig) *Runner {
	t.Helper()
	if cfg.Stream == (StreamLimits{}) {
		cfg.Stream = testLimits
	}
	r := NewRunner(e, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() {
		r.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, r.Wait(ctx), "every engine call returns")
	})
	return r
}

// drain reads a stream to its end and returns the text, the final event and
// the error.
func drain(t *testing.T, s *Stream) (text string, final Event, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return b.String(), Event{}, err
		}
		b.WriteString(ev.Text)
		if ev.Done {
			return b.String(), ev, nil
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		require.False(t, time.Now().After(deadline), "condition not met within 5s")
		time.Sleep(time.Millisecond)
	}
}

func TestStreamDeliversEverythingInOrder(t *testing.T) {
	e := &scriptedEngine{chunks: []string{"Hel", "lo", ", ", "world"}}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, "Hello, world", text)
	assert.Equal(t, FinishStop, final.Result.FinishReason)
	assert.Equal(t, 4, final.Result.CompletionTokens)
	assert.False(t, s.FirstTokenAt().IsZero())
}

func TestStreamCoalescesWhileTheReaderIsBehind(t *testing.T) {
	e := &scriptedEngine{chunks: repeat("ab", 50)}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	// The reader is away until the engine has finished.
	waitUntil(t, func() bool { return r.Running() == 0 })
	statuses, emitted := e.seen()
	assert.Equal(t, 50, emitted, "the engine never waited for the reader")
	assert.NotContains(t, statuses, Cancel)

	ev, err := s.Next(context.Background())
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("ab", 50), ev.Text, "all pending text comes as one event")
	ev, err = s.Next(context.Background())
	require.NoError(t, err)
	assert.True(t, ev.Done)
}

func TestStreamHardLimitCancelsTheEngine(t *testing.T) {
	const limit = 100
	e := &scriptedEngine{chunks: repeat("0123456789", 1000)}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4, Stream: StreamLimits{MaxPendingBytes: limit, TokenTimeout: 5 * time.Second}})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	waitUntil(t, func() bool { return r.Running() == 0 })

	statuses, emitted := e.seen()
	require.NotEmpty(t, statuses)
	assert.Equal(t, Cancel, statuses[len(statuses)-1], "the engine was cancelled")
	assert.Less(t, emitted, 20, "the engine stopped soon after the limit, not at the end of its output")

	text, _, err := drain(t, s)
	require.ErrorIs(t, err, ErrSlowConsumer)
	assert.True(t, Retryable(err))
	assert.LessOrEqual(t, len(text), limit+10, "memory held is bounded by the limit plus one chunk")
	assert.Greater(t, len(text), limit, "the text before the limit is still delivered")
}

func TestStreamTokenTimeout(t *testing.T) {
	e := &scriptedEngine{chunks: []string{"a", "b", "c"}, stallAfter: 1}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4, Stream: StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 50 * time.Millisecond}})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	text, _, err := drain(t, s)
	require.ErrorIs(t, err, ErrTokenTimeout)
	assert.Equal(t, "a", text)
	waitUntil(t, func() bool { return r.Running() == 0 })
	statuses, _ := e.seen()
	assert.Equal(t, Cancel, statuses[len(statuses)-1], "the stalled engine got Cancel when it came back")
}

func TestStreamDeadlineFinishesWithLength(t *testing.T) {
	e := &scriptedEngine{chunks: repeat("x", 200), gap: 5 * time.Millisecond}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m", Timeout: 40 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, FinishLength, final.Result.FinishReason)
	assert.Less(t, len(text), 200)
	statuses, _ := e.seen()
	assert.Equal(t, Stop, statuses[len(statuses)-1], "the engine was stopped, not cancelled")
}

func TestStreamClientGoneCancelsAtTheNextToken(t *testing.T) {
	e := &scriptedEngine{chunks: repeat("t", 500), gap: 2 * time.Millisecond}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ev, err := s.Next(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, ev.Text)

	cancel()
	_, err = s.Next(ctx)
	require.ErrorIs(t, err, ErrClientGone)
	_, emittedAtCancel := e.seen()
	waitUntil(t, func() bool { return r.Running() == 0 })
	statuses, emitted := e.seen()
	assert.Equal(t, Cancel, statuses[len(statuses)-1])
	assert.LessOrEqual(t, emitted-emittedAtCancel, 1, "the engine saw Cancel at its next token")
	s.Close()

	// The slot serves the next request.
	s2, err := r.Start(&Request{Model: "m", Timeout: time.Millisecond})
	require.NoError(t, err)
	defer s2.Close()
	_, final, err := drain(t, s2)
	require.NoError(t, err)
	assert.True(t, final.Done)
}

func TestStreamStopStringAndFlushAfterStop(t *testing.T) {
	e := &scriptedEngine{chunks: []string{"one two </", "s> three", " four"}, flush: " LEAKED"}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m", Stop: []string{"</s>"}})
	require.NoError(t, err)
	defer s.Close()
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, "one two ", text)
	assert.Equal(t, FinishStop, final.Result.FinishReason)
	statuses, emitted := e.seen()
	assert.Equal(t, []Status{Running, Stop}, statuses)
	assert.Equal(t, 2, emitted, "the engine stopped at the chunk that completed the stop string")
}

func TestStreamEngineErrorComesAfterTheText(t *testing.T) {
	e := &scriptedEngine{chunks: []string{"a", "b", "c", "d"}, failAfter: 2}
	r := newTestRunner(t, e, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	text, _, err := drain(t, s)
	var engineErr *EngineError
	require.ErrorAs(t, err, &engineErr)
	assert.Equal(t, "ab", text)
}

func TestStreamHeartbeatsWhileQueuedAndCancelWhileQueued(t *testing.T) {
	hog := &scriptedEngine{chunks: []string{"a", "b"}, stallAfter: 1}
	r := newTestRunner(t, hog, RunnerConfig{MaxQueue: 4, Stream: StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second, Heartbeat: 10 * time.Millisecond}})
	first, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer first.Close()
	waitUntil(t, func() bool { return r.Running() == 1 })

	queued, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer queued.Close()
	assert.Equal(t, 1, r.Waiting())
	ctx, cancel := context.WithCancel(context.Background())
	for range 3 {
		ev, err := queued.Next(ctx)
		require.NoError(t, err)
		assert.True(t, ev.Heartbeat, "only heartbeats while queued")
	}
	cancel()
	_, err = queued.Next(ctx)
	require.ErrorIs(t, err, ErrClientGone)
	waitUntil(t, func() bool { return r.Waiting() == 0 })
	hog.mu.Lock()
	calls := hog.calls
	hog.mu.Unlock()
	assert.Equal(t, 1, calls, "the request that left the queue cost no engine work")
}

func TestRunnerQueueFull(t *testing.T) {
	hog := &scriptedEngine{chunks: []string{"a", "b"}, stallAfter: 1}
	r := newTestRunner(t, hog, RunnerConfig{MaxQueue: 1})
	for range 2 {
		s, err := r.Start(&Request{Model: "m"})
		require.NoError(t, err)
		defer s.Close()
	}
	_, err := r.Start(&Request{Model: "m"})
	require.ErrorIs(t, err, ErrQueueFull)
}

func TestRunnerAbortAndStopAccepting(t *testing.T) {
	hog := &scriptedEngine{chunks: []string{"a", "b"}, stallAfter: 1}
	r := newTestRunner(t, hog, RunnerConfig{MaxQueue: 4})
	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	r.StopAccepting()
	_, err = r.Start(&Request{Model: "m"})
	require.ErrorIs(t, err, ErrShuttingDown)

	waitUntil(t, func() bool { _, n := hog.seen(); return n == 1 })
	r.Abort()
	text, _, err := drain(t, s)
	require.ErrorIs(t, err, ErrShuttingDown)
	assert.Equal(t, "a", text)
}

func TestRunnerUnknownModelAndPanics(t *testing.T) {
	r := newTestRunner(t, &scriptedEngine{panics: true}, RunnerConfig{MaxQueue: 4})
	_, err := r.Start(&Request{Model: "nope"})
	require.ErrorIs(t, err, ErrModelNotFound)

	s, err := r.Start(&Request{Model: "m"})
	require.NoError(t, err)
	defer s.Close()
	_, _, err = drain(t, s)
	var engineErr *EngineError
	require.ErrorAs(t, err, &engineErr, "a panicking engine fails its request, not the daemon")
	waitUntil(t, func() bool { return r.Running() == 0 })
}
