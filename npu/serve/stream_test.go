package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

func TestStreamDeliversEverythingInOrder(t *testing.T) {
	e := &fakeEngine{script: texts("Hel", "lo", ", ", "", "world")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m"})
	evs, err := readAll(t, s)
	require.NoError(t, err)
	assert.Equal(t, "Hello, world", textOf(evs))
	for _, ev := range evs[:len(evs)-1] {
		assert.NotEmpty(t, ev.Text, "no empty text events")
	}
	final := evs[len(evs)-1]
	assert.True(t, final.Done)
	assert.Equal(t, npu.FinishStop, final.Result.FinishReason)
	assert.Equal(t, 5, final.Result.CompletionTokens)
	assert.Equal(t, 3, final.Result.PromptTokens)
	assert.False(t, s.FirstTokenAt().IsZero())
	assert.Equal(t, repeatStatus(npu.Running, 5), e.gen(t, 0).statuses)
}

func TestStreamCoalescesWhileTheReaderIsBehind(t *testing.T) {
	var chunks []string
	for i := range 100 {
		chunks = append(chunks, fmt.Sprintf("%02d,", i))
	}
	e := &fakeEngine{script: texts(chunks...)}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m"})

	// The reader is away until the engine has finished: the engine never
	// waits for it.
	g := e.waitReturned(t, 0)
	assert.Equal(t, repeatStatus(npu.Running, 100), g.statuses)

	ev, err := next(t, s)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(chunks, ""), ev.Text, "all pending text comes as one event, in order")
	assert.Equal(t, 100, ev.Tokens, "and says how many callbacks it holds")
	ev, err = next(t, s)
	require.NoError(t, err)
	assert.True(t, ev.Done)
	assert.Equal(t, 100, ev.Result.CompletionTokens)
}

func TestStreamHardLimitCancelsTheEngine(t *testing.T) {
	synctest.Test(t, testStreamHardLimitCancelsTheEngine)
}

func testStreamHardLimitCancelsTheEngine(t *testing.T) {
	const limit = 100
	e := &fakeEngine{script: repeatStep(step{text: "0123456789"}, 1000), flush: []string{"FLUSH"}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: StreamLimits{MaxPendingBytes: limit, TokenTimeout: 5 * time.Second}})
	s := start(t, r, &npu.Request{Model: "m"})

	g := e.waitReturned(t, 0)
	assert.Equal(t, statusesOf(10, npu.Cancel), g.statuses, "cancelled at the chunk that passed the limit")
	assert.Equal(t, []npu.Status{npu.Cancel}, g.afterEnd)

	ev, err := next(t, s)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("0123456789", 11), ev.Text, "the text before the limit is still delivered")
	_, err = next(t, s)
	require.ErrorIs(t, err, npu.ErrSlowConsumer)
	_, err = next(t, s)
	require.ErrorIs(t, err, npu.ErrSlowConsumer, "the error stays")
	waitUntil(t, func() bool { return r.Running() == 0 })
}

func TestStreamTokenTimeout(t *testing.T) {
	limits := StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 20 * time.Millisecond}

	t.Run("engine ignores ctx", inBubble(func(t *testing.T) {
		stalled := make(chan struct{})
		e := &fakeEngine{script: []step{{text: "a"}, {text: "b", gate: stalled}, {text: "c"}}, flush: []string{"z"}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: limits})
		s := start(t, r, &npu.Request{Model: "m"})

		ev, err := next(t, s)
		require.NoError(t, err)
		assert.Equal(t, "a", ev.Text)
		_, err = next(t, s)
		require.ErrorIs(t, err, npu.ErrTokenTimeout)
		assert.Len(t, e.gen(t, 0).statuses, 1, "the error came while the engine was still stalled")

		close(stalled) // the engine comes back
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, r.Wait(ctx), "the engine goroutine returned")
		g := e.gen(t, 0)
		assert.Equal(t, []npu.Status{npu.Running, npu.Cancel}, g.statuses, "its next callback was answered Cancel")
		assert.Equal(t, []npu.Status{npu.Cancel}, g.afterEnd)
		assert.Zero(t, r.Running())

		_, err = next(t, s)
		require.ErrorIs(t, err, npu.ErrTokenTimeout, "no text after the timeout, and the error stays")
	}))

	t.Run("engine returns ctx error", inBubble(func(t *testing.T) {
		e := &fakeEngine{script: []step{{text: "a"}, {stall: true}}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: limits})
		s := start(t, r, &npu.Request{Model: "m"})
		text, _, err := drain(t, s)
		require.ErrorIs(t, err, npu.ErrTokenTimeout)
		assert.Equal(t, "a", text)
		e.waitReturned(t, 0)
		_, err = next(t, s)
		require.ErrorIs(t, err, npu.ErrTokenTimeout, "the engine's context.Canceled is reported as its cause")
		assert.NotErrorIs(t, err, context.Canceled)
	}))

	t.Run("queued time does not count", inBubble(func(t *testing.T) {
		gate := make(chan struct{})
		e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: limits})
		hog := start(t, r, &npu.Request{Model: "m"})
		waitUntil(t, func() bool { return e.calls() == 1 })
		queued := start(t, r, &npu.Request{Model: "m"})
		// The silent engine times out; the request queued behind it waits
		// as long but is not timed out for it.
		_, _, err := drain(t, hog)
		require.ErrorIs(t, err, npu.ErrTokenTimeout)
		time.Sleep(2 * limits.TokenTimeout)
		close(gate)
		text, final, err := drain(t, queued)
		require.NoError(t, err)
		assert.Equal(t, "a", text)
		assert.True(t, final.Done)
		assert.Equal(t, []npu.Status{npu.Cancel}, e.waitReturned(t, 0).statuses)
	}))
}

func TestStreamDeadlineFinishesWithLength(t *testing.T) {
	synctest.Test(t, testStreamDeadlineFinishesWithLength)
}

func testStreamDeadlineFinishesWithLength(t *testing.T) {
	e := &fakeEngine{script: repeatStep(step{text: "x", delay: 2 * time.Millisecond}, 500), flush: []string{"!"}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	begin := time.Now()
	s := start(t, r, &npu.Request{Model: "m", Timeout: 30 * time.Millisecond})
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(begin), 30*time.Millisecond)
	assert.Equal(t, npu.FinishLength, final.Result.FinishReason, "the engine said stop; the deadline says length")

	g := e.waitReturned(t, 0)
	require.Less(t, len(g.statuses), 500, "the engine was stopped early")
	assert.Equal(t, statusesOf(len(g.statuses)-1, npu.Stop), g.statuses, "stopped, not cancelled")
	assert.Equal(t, []npu.Status{npu.Stop}, g.afterEnd)
	assert.Equal(t, strings.Repeat("x", len(g.statuses))+"!", text, "nothing generated before the stop is lost")
}

// TestStreamDeadlineWithoutAReader: a writer stuck on a slow client (not
// calling Next) must not let the engine run past the deadline.
func TestStreamDeadlineWithoutAReader(t *testing.T) {
	synctest.Test(t, testStreamDeadlineWithoutAReader)
}

func testStreamDeadlineWithoutAReader(t *testing.T) {
	e := &fakeEngine{script: repeatStep(step{text: "x", delay: 2 * time.Millisecond}, 500)}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m", Timeout: 30 * time.Millisecond})
	g := e.waitReturned(t, 0) // nobody reads meanwhile
	require.Less(t, len(g.statuses), 500, "the engine was stopped at the deadline")
	assert.Equal(t, npu.Stop, g.statuses[len(g.statuses)-1])
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, npu.FinishLength, final.Result.FinishReason)
	assert.Equal(t, strings.Repeat("x", len(g.statuses)), text)
}

func TestStreamClientGone(t *testing.T) {
	tests := []struct {
		name  string
		leave func(s npu.Stream) error // how the client goes away; returns what Next said
	}{
		{"Next's context ends", func(s npu.Stream) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := s.Next(ctx)
			return err
		}},
		{"Close", func(s npu.Stream) error {
			s.Close()
			_, err := s.Next(context.Background())
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stalled := make(chan struct{})
			e := &fakeEngine{script: []step{{text: "a"}, {text: "b", gate: stalled}, {text: "c"}}, flush: []string{"z1", "z2"}}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
			s := start(t, r, &npu.Request{Model: "m"})
			ev, err := next(t, s)
			require.NoError(t, err)
			require.Equal(t, "a", ev.Text)

			err = tc.leave(s)
			require.ErrorIs(t, err, npu.ErrClientGone)
			assert.Equal(t, 1, r.Running(), "a native engine only learns at its next callback")

			close(stalled)
			waitUntil(t, func() bool { return r.Running() == 0 })
			g := e.waitReturned(t, 0)
			assert.Equal(t, []npu.Status{npu.Running, npu.Cancel}, g.statuses)
			assert.Equal(t, []npu.Status{npu.Cancel, npu.Cancel}, g.afterEnd, "calls after Cancel are answered Cancel")
			_, err = s.Next(context.Background())
			require.ErrorIs(t, err, npu.ErrClientGone, "no text arrives after the client left")
			s.Close()

			// The slot serves the next request.
			text, final, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
			require.NoError(t, err)
			assert.Equal(t, "abc", text)
			assert.True(t, final.Done)
			assert.Equal(t, 2, e.calls())
		})
	}
}

func TestStreamClientGoneWrapsTheContextCause(t *testing.T) {
	synctest.Test(t, testStreamClientGoneWrapsTheContextCause)
}

func testStreamClientGoneWrapsTheContextCause(t *testing.T) {
	stalled := make(chan struct{})
	defer close(stalled)
	e := &fakeEngine{script: []step{{text: "a", gate: stalled}}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := s.Next(ctx) // blocks until the timeout: the engine is silent
	require.ErrorIs(t, err, npu.ErrClientGone)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestStreamIgnoresTextAfterAStopString(t *testing.T) {
	e := &fakeEngine{script: texts("ab", "c</", "s>tail", "more"), flush: []string{"FLUSH1", "FLUSH2"}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m", Stop: []string{"</s>"}})
	text, final, err := drain(t, s)
	require.NoError(t, err)
	assert.Equal(t, "abc", text)
	assert.Equal(t, npu.FinishStop, final.Result.FinishReason)
	g := e.waitReturned(t, 0)
	assert.Equal(t, []npu.Status{npu.Running, npu.Running, npu.Stop}, g.statuses)
	assert.Equal(t, []npu.Status{npu.Stop, npu.Stop}, g.afterEnd, "calls after Stop are answered Stop")
}

func TestStreamEngineError(t *testing.T) {
	t.Run("after some text", func(t *testing.T) {
		cause := errors.New("device lost")
		e := &fakeEngine{script: append(texts("a", "b"), step{err: &npu.EngineError{Engine: "fake", Cause: cause}})}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
		s := start(t, r, &npu.Request{Model: "m"})
		e.waitReturned(t, 0)
		ev, err := next(t, s)
		require.NoError(t, err, "the text comes first")
		assert.Equal(t, "ab", ev.Text)
		_, err = next(t, s)
		var engineErr *npu.EngineError
		require.ErrorAs(t, err, &engineErr)
		assert.Equal(t, "fake", engineErr.Engine)
		require.ErrorIs(t, err, cause)
		_, err = next(t, s)
		require.ErrorAs(t, err, &engineErr, "the error stays")
		assert.Zero(t, r.Running())
	})
	t.Run("before any text", func(t *testing.T) {
		e := &fakeEngine{early: fmt.Errorf("prompt too long: %w", npu.ErrContextLength)}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
		s := start(t, r, &npu.Request{Model: "m"})
		text, _, err := drain(t, s)
		require.ErrorIs(t, err, npu.ErrContextLength)
		assert.Empty(t, text)
		assert.True(t, s.FirstTokenAt().IsZero())
	})
}

func TestStreamStopStrings(t *testing.T) {
	tests := []struct {
		name       string
		chunks     []string
		stops      []string
		engineSays npu.FinishReason
		want       string
		wantReason npu.FinishReason
		stopped    bool // whether the engine was told Stop
	}{
		{"across two chunks", []string{"Hello </", "s> world"}, []string{"</s>"}, "", "Hello ", npu.FinishStop, true},
		{"across three chunks", []string{"Hello <", "/s", "> world"}, []string{"</s>"}, "", "Hello ", npu.FinishStop, true},
		{"at the start of a chunk", []string{"abc", "</s>def"}, []string{"</s>"}, "", "abc", npu.FinishStop, true},
		{"at the end of a chunk", []string{"abc</s>", "def"}, []string{"</s>"}, "", "abc", npu.FinishStop, true},
		{"earliest of several", []string{"one two", " three"}, []string{"three", "two"}, "", "one ", npu.FinishStop, true},
		{"multi-byte, split inside a character", []string{"x", "\xe6\x97", "\xa5\xe6\x9c", "\xac!"}, []string{"日本"}, "", "x", npu.FinishStop, true},
		{"overrides the engine's length", []string{"abc</s>"}, []string{"</s>"}, npu.FinishLength, "abc", npu.FinishStop, true},
		{"prefix released at the end", []string{"abc</", "s"}, []string{"</s>"}, npu.FinishLength, "abc</s", npu.FinishLength, false},
		{"no match", []string{"abc", "def"}, []string{"</s>", "###"}, "", "abcdef", npu.FinishStop, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{script: texts(tc.chunks...), finish: tc.engineSays, flush: []string{"</s>more"}}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
			s := start(t, r, &npu.Request{Model: "m", Stop: tc.stops})
			evs, err := readAll(t, s)
			require.NoError(t, err)
			for _, ev := range evs {
				assert.True(t, utf8.ValidString(ev.Text))
				for _, stop := range tc.stops {
					assert.NotContains(t, ev.Text, stop)
				}
			}
			assert.Equal(t, tc.want, textOf(evs))
			assert.Equal(t, tc.wantReason, evs[len(evs)-1].Result.FinishReason)
			g := e.waitReturned(t, 0)
			if tc.stopped {
				assert.Equal(t, npu.Stop, g.statuses[len(g.statuses)-1])
			} else {
				assert.Equal(t, repeatStatus(npu.Running, len(tc.chunks)), g.statuses)
			}
		})
	}
}

func TestStreamHeartbeats(t *testing.T) {
	const beat = 10 * time.Millisecond
	limits := StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second, Heartbeat: beat}

	t.Run("while queued, and leaving the queue", inBubble(func(t *testing.T) {
		gate := make(chan struct{})
		e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: limits})
		hog := start(t, r, &npu.Request{Model: "m"})
		waitUntil(t, func() bool { return e.calls() == 1 })

		queued := start(t, r, &npu.Request{Model: "m"})
		assert.Equal(t, 1, r.Waiting())
		ctx, cancel := context.WithCancel(context.Background())
		var at []time.Time
		for range 3 {
			ev, err := queued.Next(ctx)
			require.NoError(t, err)
			require.True(t, ev.Heartbeat, "only heartbeats while queued")
			at = append(at, time.Now())
		}
		assert.GreaterOrEqual(t, at[2].Sub(at[0]), 3*beat/2, "heartbeats are spaced, not a busy loop")

		cancel()
		_, err := queued.Next(ctx)
		require.ErrorIs(t, err, npu.ErrClientGone)
		waitUntil(t, func() bool { return r.Waiting() == 0 })
		assert.Equal(t, 1, r.Running(), "the hog still runs")

		close(gate)
		text, _, err := drain(t, hog)
		require.NoError(t, err)
		assert.Equal(t, "a", text)
		e.waitReturned(t, 0)
		assert.Equal(t, 1, e.calls(), "the request that left the queue cost no engine work")

		text, _, err = drain(t, start(t, r, &npu.Request{Model: "m"}))
		require.NoError(t, err)
		assert.Equal(t, "a", text)
		assert.Equal(t, 2, e.calls())
	}))

	t.Run("while the engine is silent", inBubble(func(t *testing.T) {
		gate := make(chan struct{})
		e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: limits})
		s := start(t, r, &npu.Request{Model: "m"})
		waitUntil(t, func() bool { return r.Running() == 1 })
		ev, err := next(t, s)
		require.NoError(t, err)
		assert.True(t, ev.Heartbeat)
		close(gate)
		text, final, err := drain(t, s)
		require.NoError(t, err)
		assert.Equal(t, "a", text)
		assert.True(t, final.Done)
	}))
}

func TestRouterQueueFull(t *testing.T) {
	for _, maxQueue := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("max queue %d", maxQueue), func(t *testing.T) {
			gate := make(chan struct{})
			defer close(gate)
			e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: maxQueue})
			for range maxQueue + 1 {
				start(t, r, &npu.Request{Model: "m"})
			}
			_, err := r.Start(&npu.Request{Model: "m"})
			require.ErrorIs(t, err, npu.ErrQueueFull)
			assert.GreaterOrEqual(t, r.RetryAfter(), time.Second)
			assert.Equal(t, maxQueue, r.Waiting())
		})
	}
}

func TestRouterQueueTimeout(t *testing.T) { synctest.Test(t, testRouterQueueTimeout) }

func testRouterQueueTimeout(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, QueueTimeout: 20 * time.Millisecond})
	start(t, r, &npu.Request{Model: "m"})
	waitUntil(t, func() bool { return e.calls() == 1 })
	_, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
	require.ErrorIs(t, err, npu.ErrQueueTimeout)
	assert.Zero(t, r.Waiting())
	assert.Equal(t, 1, e.calls())
}

func TestRouterReportsQueueTime(t *testing.T) { synctest.Test(t, testRouterReportsQueueTime) }

func testRouterReportsQueueTime(t *testing.T) {
	gate := make(chan struct{})
	e := &fakeEngine{script: []step{{text: "a", gate: gate}}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	hog := start(t, r, &npu.Request{Model: "m"})
	waitUntil(t, func() bool { return e.calls() == 1 })
	queued := start(t, r, &npu.Request{Model: "m"})
	time.Sleep(30 * time.Millisecond)
	close(gate)
	_, first, err := drain(t, hog)
	require.NoError(t, err)
	_, second, err := drain(t, queued)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Millisecond, second.Result.Timings.Queue, "the wait exactly, on the bubble's clock")
	assert.Less(t, first.Result.Timings.Queue, second.Result.Timings.Queue)
}

func TestRouterStopAcceptingAndAbort(t *testing.T) {
	gate := make(chan struct{})
	e := &fakeEngine{script: []step{{text: "a"}, {text: "b", gate: gate}}, flush: []string{"z"}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	running := start(t, r, &npu.Request{Model: "m"})
	queued := start(t, r, &npu.Request{Model: "m"})
	waitUntil(t, func() bool { return e.calls() == 1 && len(e.gen(t, 0).statuses) == 1 })

	r.StopAccepting()
	_, err := r.Start(&npu.Request{Model: "m"})
	require.ErrorIs(t, err, npu.ErrShuttingDown)
	_, err = r.LoadModel(context.Background(), "m", nil)
	require.ErrorIs(t, err, npu.ErrShuttingDown)
	assert.Equal(t, 1, r.Running(), "streams already admitted go on")
	assert.Equal(t, 1, r.Waiting())

	r.Abort()
	text, _, err := drain(t, running)
	require.ErrorIs(t, err, npu.ErrShuttingDown)
	assert.Equal(t, "a", text)
	_, _, err = drain(t, queued)
	require.ErrorIs(t, err, npu.ErrShuttingDown)

	close(gate)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Wait(ctx))
	g := e.gen(t, 0)
	assert.Equal(t, []npu.Status{npu.Running, npu.Cancel}, g.statuses, "the engine got Cancel at its next callback")
	assert.Equal(t, 1, e.calls(), "the queued request never reached the engine")
}

func TestRouterEnginePanics(t *testing.T) {
	tests := []struct {
		name   string
		script []step
		text   string
	}{
		{"before any text", []step{{panic: "boom"}}, ""},
		{"after some text", append(texts("a", "b"), step{panic: errors.New("boom")}), "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{script: tc.script}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
			for i := range 2 { // the slot is released: a second request is served too
				text, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
				var engineErr *npu.EngineError
				require.ErrorAs(t, err, &engineErr, "a panicking engine fails its request, not the daemon")
				assert.Equal(t, "fake", engineErr.Engine)
				assert.ErrorContains(t, err, "panic: boom")
				assert.Equal(t, tc.text, text)
				waitUntil(t, func() bool { return r.Running() == 0 })
				assert.Equal(t, i+1, e.calls())
			}
		})
	}
}

func TestRouterUnknownModel(t *testing.T) {
	e := &fakeEngine{script: texts("a")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	_, err := r.Start(&npu.Request{Model: "nope"})
	require.ErrorIs(t, err, npu.ErrModelNotFound)
	assert.Zero(t, e.calls())
	m, err := r.Model("m")
	require.NoError(t, err)
	assert.Equal(t, 1000, m.ContextLength)
	assert.Equal(t, e.Models(), r.Models())
	assert.Same(t, e, r.Engine().(*fakeEngine))
}

func TestRouterWithoutRegistryOrEmbedder(t *testing.T) {
	e := &fakeEngine{}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	ctx := context.Background()
	tests := []struct {
		name    string
		call    func() error
		wantErr error
	}{
		{"pull a served model", func() error { return r.Pull(ctx, "m", nil) }, nil},
		{"pull another model", func() error { return r.Pull(ctx, "other", nil) }, npu.ErrNotSupported},
		{"delete", func() error { return r.Delete(ctx, "m") }, npu.ErrNotSupported},
		{"delete unknown", func() error { return r.Delete(ctx, "other") }, npu.ErrModelNotFound},
		{"copy", func() error { return r.Copy(ctx, "m", "n") }, npu.ErrNotSupported},
		{"copy unknown", func() error { return r.Copy(ctx, "other", "n") }, npu.ErrModelNotFound},
		{"embed", func() error {
			_, err := r.Embed(ctx, npu.EmbedRequest{Model: "m", Inputs: []string{"x"}})
			return err
		}, npu.ErrNotSupported},
		{"embed unknown", func() error {
			_, err := r.Embed(ctx, npu.EmbedRequest{Model: "other", Inputs: []string{"x"}})
			return err
		}, npu.ErrModelNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
		})
	}
	assert.Zero(t, e.calls())
}

func TestCollectAnswer(t *testing.T) {
	t.Run("whole answer, heartbeats skipped", inBubble(func(t *testing.T) {
		e := &fakeEngine{script: []step{{text: "Hel", delay: 30 * time.Millisecond}, {text: "lo"}}}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, Stream: StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second, Heartbeat: 5 * time.Millisecond}})
		a, err := npu.CollectAnswer(context.Background(), start(t, r, &npu.Request{Model: "m"}).Next)
		text, res := a.Text, a.Result
		require.NoError(t, err)
		assert.Equal(t, "Hello", text)
		assert.Equal(t, npu.FinishStop, res.FinishReason)
		assert.Equal(t, 2, res.CompletionTokens)
	}))
	t.Run("text so far with the error", inBubble(func(t *testing.T) {
		e := &fakeEngine{script: append(texts("a", "b"), step{err: &npu.EngineError{Engine: "fake", Cause: errors.New("device lost")}})}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
		a, err := npu.CollectAnswer(context.Background(), start(t, r, &npu.Request{Model: "m"}).Next)
		text, res := a.Text, a.Result
		var engineErr *npu.EngineError
		require.ErrorAs(t, err, &engineErr)
		assert.Equal(t, "ab", text)
		assert.Zero(t, res)
	}))
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		status npu.Status
		want   string
	}{
		{npu.Running, "RUNNING"},
		{npu.Stop, "STOP"},
		{npu.Cancel, "CANCEL"},
		{npu.Status(7), "UNKNOWN"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.status.String())
	}
	// The values are OpenVINO GenAI's ov_genai_streaming_status_e.
	assert.Equal(t, []int{0, 1, 2}, []int{int(npu.Running), int(npu.Stop), int(npu.Cancel)})
}

// Issue 16: a request that needs thinking from a model that cannot think
// is a request error naming both, before it queues.
func TestRouterRefusesThinkingToAModelWithout(t *testing.T) {
	r := newTestRouter(t, &fakeEngine{script: texts("a")}, PoolConfig{MaxQueue: 4})
	on := true
	_, err := r.Start(&npu.Request{Model: "m", Prompt: "x", Think: &on})
	var invalid *npu.InvalidRequestError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, invalid.Message, `model "m" does not support thinking`)
	off := false
	s, err := r.Start(&npu.Request{Model: "m", Prompt: "x", Think: &off})
	require.NoError(t, err, "turning it off asks nothing of the model")
	s.Close()
}

// Issue 16: the bridge splits a reasoning model's <think> block from its
// answer; the answer's stop strings never see the reasoning.
func TestStreamSplitsReasoning(t *testing.T) {
	e := &fakeEngine{script: texts("<thi", "nk>\nfirst ", "STOP then</think>", "\n\nthe answer", " STOP here")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m", Stop: []string{"STOP"}})
	a, err := npu.CollectAnswer(t.Context(), s.Next)
	text, reasoning, res := a.Text, a.Reasoning, a.Result
	require.NoError(t, err)
	assert.Equal(t, "first STOP then", reasoning, "a stop string inside the reasoning does not stop the answer")
	assert.Equal(t, "the answer ", text)
	assert.Equal(t, npu.FinishStop, res.FinishReason)
}
