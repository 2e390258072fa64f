package journal

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/npu/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counting counts the generations an engine runs.
type counting struct {
	*nputest.RecordingEngine
	generations atomic.Int32
}

func (c *counting) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	c.generations.Add(1)
	return c.RecordingEngine.Generate(ctx, req, sink)
}

type fixture struct {
	engine *counting
	router *serve.Router
	reg    *Registry
}

func newFixture(t *testing.T, itl time.Duration, cfg Config) *fixture {
	t.Helper()
	// A generation asked for with the prompt "stall" stops producing after
	// its first token until it is abandoned: it cannot end by itself
	// before a window runs out, however slow the machine.
	stall := func(r *npu.Request) sim.Fault {
		if sim.PromptText(r) == "stall" {
			return sim.Fault{StallAtToken: 2}
		}
		return sim.Fault{}
	}
	engine := &counting{RecordingEngine: &nputest.RecordingEngine{Engine: sim.New(sim.Config{ITL: itl, Faults: stall})}}
	router := serve.NewEngineRouter(engine, serve.PoolConfig{MaxQueue: 8, Stream: serve.StreamLimits{MaxPendingBytes: 1 << 20}}, slog.New(slog.DiscardHandler))
	if cfg.Window == 0 {
		cfg.Window = time.Second
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 1 << 20
	}
	f := &fixture{engine: engine, router: router, reg: NewRegistry(cfg)}
	t.Cleanup(func() {
		router.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, router.Wait(ctx))
		require.NoError(t, f.reg.Wait(ctx))
	})
	return f
}

func (f *fixture) starter(tokens int) func() (npu.Stream, error) {
	return func() (npu.Stream, error) {
		return f.router.Start(&npu.Request{Model: sim.ModelID, Prompt: "journal", MaxTokens: tokens})
	}
}

// stallingStarter starts a generation that never ends by itself.
func (f *fixture) stallingStarter() func() (npu.Stream, error) {
	return func() (npu.Stream, error) {
		return f.router.Start(&npu.Request{Model: sim.ModelID, Prompt: "stall", MaxTokens: 100})
	}
}

// readAll reads a cursor to its last entry and returns the text.
func readAll(t *testing.T, c *Cursor) (string, Entry) {
	t.Helper()
	var b strings.Builder
	for {
		e, err := c.Next(t.Context())
		require.NoError(t, err)
		b.WriteString(e.Text)
		if e.Done || e.Err != nil || e.AfterEnd {
			return b.String(), e
		}
	}
}

func TestTwoStartsWithOneIDRunOneGeneration(t *testing.T) {
	f := newFixture(t, time.Millisecond, Config{})
	j1, joined, err := f.reg.Open(Key{ID: "r1"}, "r1", "fp", false, f.starter(40))
	require.NoError(t, err)
	assert.False(t, joined)
	j2, joined, err := f.reg.Open(Key{ID: "r1"}, "r1", "fp", false, f.starter(40))
	require.NoError(t, err)
	assert.True(t, joined)
	assert.Same(t, j1, j2)

	c1, c2 := j1.Attach(0), j2.Attach(0)
	defer c1.Close()
	defer c2.Close()
	text1, end1 := readAll(t, c1)
	text2, end2 := readAll(t, c2)
	assert.Equal(t, text1, text2)
	assert.True(t, end1.Done && end2.Done)
	assert.Equal(t, 40, end1.Result.CompletionTokens)
	assert.Equal(t, sim.Text(0, "journal")[:len(text1)], text1, "the engine's own text")
	assert.EqualValues(t, 1, f.engine.generations.Load(), "one generation for two starts")

	_, _, err = f.reg.Open(Key{ID: "r1"}, "r1", "other body", false, f.starter(40))
	require.ErrorIs(t, err, ErrConflict)
}

// Issue 12, item 3: ids were one global namespace, so another tenant who
// guessed an id and body read the stream (and a different body got a 409
// that confirmed the id). Each tenant has its own.
func TestTenantsHaveTheirOwnIDs(t *testing.T) {
	f := newFixture(t, time.Millisecond, Config{})
	a, _, err := f.reg.Open(Key{Tenant: "alice", ID: "r1"}, "a-1", "fp", false, f.starter(10))
	require.NoError(t, err)
	b, joined, err := f.reg.Open(Key{Tenant: "bob", ID: "r1"}, "b-1", "fp", false, f.starter(10))
	require.NoError(t, err)
	assert.False(t, joined, "bob's r1 is not alice's")
	assert.NotSame(t, a, b)
	_, _, err = f.reg.Open(Key{Tenant: "bob", ID: "r1"}, "b-2", "other body", false, f.starter(10))
	assert.ErrorIs(t, err, ErrConflict, "a conflict only within one tenant")
	assert.Equal(t, "a-1", a.Owner())
	for _, j := range []*Journal{a, b} {
		c := j.Attach(0)
		readAll(t, c)
		c.Close()
	}
	assert.EqualValues(t, 2, f.engine.generations.Load())
}

func TestResumeFromAnyPositionHasNoGapAndNoDuplicate(t *testing.T) {
	f := newFixture(t, 0, Config{})
	j, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(30))
	require.NoError(t, err)
	first := j.Attach(0)
	whole, _ := readAll(t, first)
	for from := 0; from <= 31; from++ {
		var b strings.Builder
		c := j.Attach(0)
		for i := 0; i < from; i++ {
			e, err := c.Next(t.Context())
			require.NoError(t, err)
			b.WriteString(e.Text)
		}
		c.Close()
		rest := j.Attach(from) // a new connection with Last-Event-ID from-1
		text, end := readAll(t, rest)
		rest.Close()
		b.WriteString(text)
		assert.Equal(t, whole, b.String(), "resumed at %d", from)
		assert.True(t, end.Done || end.AfterEnd)
	}
	e, err := j.Attach(1000).Next(t.Context())
	require.NoError(t, err)
	assert.True(t, e.AfterEnd, "a position past the end has nothing left but the terminator")
	first.Close()
}

func TestLastReaderLeavingCancelsAtOnceUnlessResumable(t *testing.T) {
	synctest.Test(t, testLastReaderLeavingCancelsAtOnceUnlessResumable)
}

func testLastReaderLeavingCancelsAtOnceUnlessResumable(t *testing.T) {
	f := newFixture(t, 5*time.Millisecond, Config{Window: 300 * time.Millisecond})
	j, _, err := f.reg.Open(Key{ID: "plain"}, "plain", "fp", false, f.starter(10000))
	require.NoError(t, err)
	c := j.Attach(0)
	_, err = c.Next(t.Context())
	require.NoError(t, err)
	c.Close()
	require.Eventually(t, func() bool { return f.router.Running() == 0 }, 5*time.Second, time.Millisecond, "cancelled when its reader left")
	st := f.engine.Statuses()
	assert.Equal(t, npu.Cancel, st[len(st)-1])

	// Resumable: the generation goes on without a reader, and a reader
	// that comes back within the window finds every event.
	rj, _, err := f.reg.Open(Key{ID: "resumable"}, "resumable", "fp", true, f.starter(60))
	require.NoError(t, err)
	c = rj.Attach(0)
	e, err := c.Next(t.Context())
	require.NoError(t, err)
	got := e.Text
	c.Close()
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, 1, f.router.Running(), "still generating with nobody attached")
	back := rj.Attach(1)
	rest, end := readAll(t, back)
	back.Close()
	assert.True(t, end.Done, "%+v", end)
	assert.Equal(t, sim.Text(0, "journal")[:len(got+rest)], got+rest)

	// Resumable but nobody comes back: cancelled after the window.
	gone, _, err := f.reg.Open(Key{ID: "gone"}, "gone", "fp", true, f.stallingStarter())
	require.NoError(t, err)
	gone.Attach(0).Close()
	require.Eventually(t, func() bool { return f.router.Running() == 0 }, 5*time.Second, time.Millisecond)
	late := gone.Attach(0)
	defer late.Close()
	_, e = readAll(t, late)
	// Issue 12, item 10: a reader that comes later is not the client that
	// left: it is told the generation was abandoned (an error it must
	// pass on, with its terminator), not "client gone" (silence).
	assert.ErrorIs(t, e.Err, ErrAbandoned)
	assert.NotErrorIs(t, e.Err, npu.ErrClientGone)
}

func TestOldEventsExpirePastMaxBytes(t *testing.T) {
	f := newFixture(t, time.Millisecond, Config{MaxBytes: 64})
	j, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(200))
	require.NoError(t, err)
	c := j.Attach(0)
	_, end := readAll(t, c) // a reader that keeps up loses nothing
	assert.True(t, end.Done)
	c.Close()
	_, err = j.Attach(0).Next(t.Context())
	require.ErrorIs(t, err, ErrExpired)
	j.mu.Lock()
	oldest := j.first
	j.mu.Unlock()
	late := j.Attach(oldest)
	text, e := readAll(t, late)
	late.Close()
	assert.True(t, e.Done)
	assert.LessOrEqual(t, len(text), 64)
}

func TestAReaderFallingBehindTheJournalIsASlowConsumer(t *testing.T) {
	f := newFixture(t, time.Millisecond, Config{MaxBytes: 64})
	j, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(20000))
	require.NoError(t, err)
	c := j.Attach(0)
	defer c.Close()
	_, err = c.Next(t.Context())
	require.NoError(t, err)
	// The reader stops reading (a paused client): the engine is stopped
	// once the reader is further behind than the journal keeps.
	require.Eventually(t, func() bool { return f.router.Running() == 0 }, 5*time.Second, time.Millisecond)
	st := f.engine.Statuses()
	assert.Equal(t, npu.Cancel, st[len(st)-1])
	assert.Less(t, len(st), 1000, "stopped early, not at the end of 20000 tokens")
	for err == nil {
		_, err = c.Next(t.Context())
	}
	assert.ErrorIs(t, err, npu.ErrSlowConsumer)
	assert.ErrorIs(t, err, ErrExpired)
}

func TestFinishedJournalsAreForgottenAfterTheWindow(t *testing.T) {
	f := newFixture(t, 0, Config{Window: 50 * time.Millisecond})
	j, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(3))
	require.NoError(t, err)
	c := j.Attach(0)
	readAll(t, c)
	c.Close()
	_, ok := f.reg.Lookup(Key{ID: "r"})
	assert.True(t, ok, "kept right after it finished")
	require.Eventually(t, func() bool { return f.reg.Len() == 0 }, 5*time.Second, time.Millisecond)
	_, joined, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(3))
	require.NoError(t, err)
	assert.False(t, joined, "after the window the id starts a new generation")
	c = mustAttach(t, f, "r")
	readAll(t, c)
	c.Close()
}

func mustAttach(t *testing.T, f *fixture, id string) *Cursor {
	t.Helper()
	j, ok := f.reg.Lookup(Key{ID: id})
	require.True(t, ok)
	return j.Attach(0)
}

func TestCursorHeartbeatsAndLeaves(t *testing.T) { synctest.Test(t, testCursorHeartbeatsAndLeaves) }

func testCursorHeartbeatsAndLeaves(t *testing.T) {
	f := newFixture(t, 200*time.Millisecond, Config{Heartbeat: 20 * time.Millisecond})
	j, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, f.starter(1000))
	require.NoError(t, err)
	c := j.Attach(0)
	sawBeat := false
	for i := 0; i < 50 && !sawBeat; i++ {
		e, err := c.Next(t.Context())
		require.NoError(t, err)
		sawBeat = e.Heartbeat
	}
	assert.True(t, sawBeat)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Next(ctx)
	assert.True(t, errors.Is(err, npu.ErrClientGone), "%v", err)
	c.Close()
	c.Close() // twice is fine
}

func TestStartErrorsAreReturnedAndNothingIsKept(t *testing.T) {
	f := newFixture(t, 0, Config{})
	_, _, err := f.reg.Open(Key{ID: "r"}, "r", "fp", false, func() (npu.Stream, error) {
		return f.router.Start(&npu.Request{Model: "nope"})
	})
	require.ErrorIs(t, err, npu.ErrModelNotFound)
	assert.Zero(t, f.reg.Len())
}
