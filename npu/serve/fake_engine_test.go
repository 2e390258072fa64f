package serve

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/npu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one action of a scripted generation.
type step struct {
	text  string
	delay time.Duration // slept before the step; like a native engine, it ignores ctx
	gate  chan struct{} // when set, waited for (closed) before the step, ignoring ctx
	stall bool          // wait for ctx to end, then return ctx.Err() without calling the sink
	err   error         // return this error instead of sending text
	panic any           // make Generate panic instead of sending text
}

func texts(chunks ...string) []step {
	out := make([]step, len(chunks))
	for i, c := range chunks {
		out[i] = step{text: c}
	}
	return out
}

func repeatStep(st step, n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = st
	}
	return out
}

// fakeEngine plays a script from its own goroutine, as OpenVINO's streamer
// runs on a native thread, and records what the sink answered.
type fakeEngine struct {
	npu.Unsupported
	script []step
	// flush is sent after the sink answered Stop or Cancel, whose answers the
	// engine ignores: OpenVINO flushes its detokenizer then.
	flush []string
	// early is returned before any sink call, as request errors are.
	early error
	// finish is the engine's own finish reason; FinishStop when empty.
	finish npu.FinishReason
	// details describe its model "m".
	details npu.ModelDetails

	mu   sync.Mutex
	gens []*generation
}

// generation records one Generate call.
type generation struct {
	statuses []npu.Status // the sink's answers to the scripted chunks
	afterEnd []npu.Status // its answers to calls after it said Stop or Cancel
	returned bool
}

func (e *fakeEngine) Name() string           { return "fake" }
func (e *fakeEngine) Simulated() bool        { return true }
func (e *fakeEngine) Describe() npu.Features { return npu.Features{} }
func (e *fakeEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "m", ContextLength: 1000, Details: e.details}}
}

func (e *fakeEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	g := &generation{}
	e.mu.Lock()
	e.gens = append(e.gens, g)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		g.returned = true
		e.mu.Unlock()
	}()
	if e.early != nil {
		return npu.Result{}, e.early
	}
	type outcome struct {
		res   npu.Result
		err   error
		panic any
	}
	done := make(chan outcome, 1)
	go func() {
		res := npu.Result{FinishReason: cmp.Or(e.finish, npu.FinishStop), PromptTokens: 3}
		for _, st := range e.script {
			time.Sleep(st.delay)
			if st.gate != nil {
				<-st.gate
			}
			switch {
			case st.stall:
				<-ctx.Done()
				done <- outcome{res: res, err: ctx.Err()}
				return
			case st.err != nil:
				done <- outcome{res: res, err: st.err}
				return
			case st.panic != nil:
				done <- outcome{panic: st.panic}
				return
			}
			status := sink(st.text)
			e.mu.Lock()
			g.statuses = append(g.statuses, status)
			e.mu.Unlock()
			res.CompletionTokens++
			if status == npu.Running {
				continue
			}
			for _, f := range e.flush {
				again := sink(f)
				e.mu.Lock()
				g.afterEnd = append(g.afterEnd, again)
				e.mu.Unlock()
			}
			if status == npu.Cancel {
				res.FinishReason = npu.FinishCancelled
			}
			done <- outcome{res: res}
			return
		}
		done <- outcome{res: res}
	}()
	o := <-done
	if o.panic != nil {
		panic(o.panic)
	}
	return o.res, o.err
}

// calls is the number of Generate calls so far.
func (e *fakeEngine) calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.gens)
}

// gen returns a copy of the record of the i-th Generate call.
func (e *fakeEngine) gen(t *testing.T, i int) generation {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Greater(t, len(e.gens), i, "Generate was called %d times", len(e.gens))
	g := e.gens[i]
	return generation{
		statuses: append([]npu.Status(nil), g.statuses...),
		afterEnd: append([]npu.Status(nil), g.afterEnd...),
		returned: g.returned,
	}
}

// waitReturned waits until the i-th Generate call has returned.
func (e *fakeEngine) waitReturned(t *testing.T, i int) generation {
	t.Helper()
	waitUntil(t, func() bool { return e.calls() > i && e.gen(t, i).returned })
	return e.gen(t, i)
}

func statusesOf(running int, last npu.Status) []npu.Status {
	return append(repeatStatus(npu.Running, running), last)
}

func repeatStatus(s npu.Status, n int) []npu.Status {
	out := make([]npu.Status, n)
	for i := range out {
		out[i] = s
	}
	return out
}

var testLimits = StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second}

// newTestRouter returns a router for e, alone, that is aborted and
// drained when the test ends; every engine call must have returned by then.
func newTestRouter(t *testing.T, e npu.Engine, cfg PoolConfig) *Router {
	t.Helper()
	return newTestRouterWith(t, e, cfg, RouterConfig{})
}

// newTestRouterWith is newTestRouter with the router's configuration.
func newTestRouterWith(t *testing.T, e npu.Engine, cfg PoolConfig, rc RouterConfig) *Router {
	t.Helper()
	r := NewRouter(newTestPool(e, cfg), rc, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		r.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, r.Wait(ctx), "every engine call returns")
	})
	return r
}

// newTestPool is a pool for e with the test's stream limits by default.
func newTestPool(e npu.Engine, cfg PoolConfig) *Pool {
	if cfg.Stream == (StreamLimits{}) {
		cfg.Stream = testLimits
	}
	return NewPool(e, cfg, slog.New(slog.DiscardHandler))
}

func start(t *testing.T, r *Router, req *npu.Request) npu.Stream {
	t.Helper()
	s, err := r.Start(req)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// readAll reads a stream to its end or first error and returns its events.
func readAll(t *testing.T, s npu.Stream) ([]npu.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []npu.Event
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if ev.Done {
			return evs, nil
		}
	}
}

// drain reads a stream to its end and returns its text, its final event
// (zero on error) and its error.
func drain(t *testing.T, s npu.Stream) (string, npu.Event, error) {
	t.Helper()
	evs, err := readAll(t, s)
	var final npu.Event
	if err == nil {
		final = evs[len(evs)-1]
	}
	return textOf(evs), final, err
}

func textOf(evs []npu.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Text)
	}
	return b.String()
}

func next(t *testing.T, s npu.Stream) (npu.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Next(ctx)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		require.False(t, time.Now().After(deadline), "condition not met within 5s")
		time.Sleep(time.Millisecond)
	}
}
