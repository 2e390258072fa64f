package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// losingEngine holds its model the way a worker process does: a crash
// during a job, or a worker that dies idle, loses it, and only Load brings
// it back. It never loads on its own.
type losingEngine struct {
	npu.Unsupported
	gate chan struct{} // when set, Load waits for it (a compile)

	mu        sync.Mutex
	resident  bool
	crashNext bool // the next job sends "a" and crashes
	sticky    bool // Load brings nothing back (a worker that dies at once)
	loads     int
	unloads   int
	jobs      int
}

func (e *losingEngine) Name() string    { return "losing" }
func (e *losingEngine) Simulated() bool { return true }
func (e *losingEngine) Describe() npu.Features {
	return npu.Features{LoadsModels: true, Reloads: true, Embeds: true, Transcribes: true, ExactCounts: true}
}
func (e *losingEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "m", ContextLength: 1000, Details: npu.ModelDetails{Speech: true}}}
}

func (e *losingEngine) Load(ctx context.Context, model string) error {
	if e.gate != nil {
		<-e.gate
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loads++
	e.resident = !e.sticky
	return nil
}

func (e *losingEngine) Unload(string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unloads++
	e.resident = false
	return nil
}

func (e *losingEngine) Reload(context.Context, string) error { return e.job(nil) }

// die loses the model while idle.
func (e *losingEngine) die() {
	e.mu.Lock()
	e.resident = false
	e.mu.Unlock()
}

func (e *losingEngine) counts() (loads, unloads, jobs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.loads, e.unloads, e.jobs
}

// job is one use of the model, as the worker engine reports it: found
// gone before it started (ErrModelLost alone), or lost by a crash during
// it (ErrEngineCrashed and ErrModelLost).
func (e *losingEngine) job(sink npu.Sink) error {
	e.mu.Lock()
	e.jobs++
	resident, crash := e.resident, e.crashNext
	e.crashNext = false
	if crash {
		e.resident = false
	}
	e.mu.Unlock()
	if !resident {
		return fmt.Errorf("model %q is not loaded in a worker: %w", "m", npu.ErrModelLost)
	}
	if crash {
		if sink != nil {
			sink("a")
		}
		return fmt.Errorf("the worker crashed: %w: %w", npu.ErrEngineCrashed, npu.ErrModelLost)
	}
	return nil
}

func (e *losingEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	if err := e.job(sink); err != nil {
		return npu.Result{}, err
	}
	sink("ok")
	return npu.Result{FinishReason: npu.FinishStop, CompletionTokens: 1}, nil
}

func (e *losingEngine) Embed(ctx context.Context, model string, inputs []string, _ bool) (npu.Embedded, error) {
	if err := e.job(nil); err != nil {
		return npu.Embedded{}, err
	}
	return npu.Embedded{Vectors: [][]float32{{1}}, PromptTokens: 1}, nil
}

func (e *losingEngine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	if err := e.job(nil); err != nil {
		return npu.Transcript{}, err
	}
	return npu.Transcript{Text: "heard"}, nil
}

func (e *losingEngine) CountPrompt(context.Context, *npu.Request) (int, error) {
	if err := e.job(nil); err != nil {
		return 0, err
	}
	return 7, nil
}

// loadCounter counts the loads the router reports, as the load metrics do.
type loadCounter struct {
	noObserver
	mu    sync.Mutex
	loads int
}

func (o *loadCounter) ModelLoaded(string, string, time.Duration) {
	o.mu.Lock()
	o.loads++
	o.mu.Unlock()
}

func (o *loadCounter) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.loads
}

// Issue 28: a crash during a generation ends its stream with the crash's
// class; the lifecycle forgets the model (not listed as loaded), and the
// next request loads it again through the lifecycle, which the load
// metrics hear.
func TestLostModelIsForgottenAndTheNextRequestLoadsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &losingEngine{}
		obs := &loadCounter{}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour, Observer: obs})
		assert.Equal(t, "ok", generateText(t, r))
		require.Len(t, r.Loaded(), 1)

		e.mu.Lock()
		e.crashNext = true
		e.mu.Unlock()
		text, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
		require.ErrorIs(t, err, npu.ErrEngineCrashed)
		assert.Equal(t, "engine_crashed", npu.ErrorCode(err), "the crash keeps its class")
		assert.Equal(t, "a", text, "what came before the crash")
		assert.Empty(t, r.Loaded(), "a lost model is not listed as loaded")
		_, jobs := countsOf(e)
		assert.Equal(t, 2, jobs, "a crash during a job is not run again")

		assert.Equal(t, "ok", generateText(t, r))
		loads, _ := countsOf(e)
		assert.Equal(t, 2, loads, "loaded again by the next request")
		assert.Equal(t, 2, obs.count(), "and the load metrics heard it")
		require.Len(t, r.Loaded(), 1)

		time.Sleep(2 * time.Hour) // the bubble's clock: the keep-alive passes
		synctest.Wait()
		assert.Empty(t, r.Loaded())
		_, unloads, _ := e.counts()
		assert.Equal(t, 1, unloads, "the lost instance's timer was stopped: one unload, of the new one")
	})
}

// Issue 28: a request that finds its model gone before it started (the
// worker died idle) loads it again (a load its heartbeats show, and the
// lifecycle lists) and is served, once.
func TestModelFoundGoneIsLoadedAgainAndTheRequestServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &losingEngine{}
		obs := &loadCounter{}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour, Observer: obs,
			Stream: StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: time.Second, Heartbeat: 100 * time.Millisecond}})
		assert.Equal(t, "ok", generateText(t, r))
		e.die()
		e.gate = make(chan struct{})

		s := start(t, r, &npu.Request{Model: "m"})
		ev, err := s.Next(t.Context())
		require.NoError(t, err)
		require.True(t, ev.Heartbeat)
		require.NotNil(t, ev.Loading, "the heartbeat says the model loads")
		assert.Equal(t, "m", ev.Loading.Model)
		assert.Equal(t, []string{"m"}, loadingModels(r), "listed as loading")
		assert.Empty(t, r.Loaded(), "not as loaded")
		time.Sleep(10 * time.Second) // a long compile: no token timeout runs meanwhile
		close(e.gate)
		text, final, err := drain(t, s)
		require.NoError(t, err)
		assert.Equal(t, "ok", text)
		assert.Equal(t, 10*time.Second, final.Result.Timings.Load.Round(time.Second), "the load time is the request's")
		loads, jobs := countsOf(e)
		assert.Equal(t, 2, loads)
		assert.Equal(t, 3, jobs, "the job found the model gone, then ran")
		assert.Equal(t, 2, obs.count())
		require.Len(t, r.Loaded(), 1)
		assert.Zero(t, r.Loaded()[0].InUse, "no use left behind")
	})
}

// Issue 28: the request runs once more, not again and again: a model that
// is gone again after its load fails the request with model_lost.
func TestModelFoundGoneIsRetriedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &losingEngine{}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour})
		assert.Equal(t, "ok", generateText(t, r))
		e.die()
		e.mu.Lock()
		e.sticky = true
		e.mu.Unlock()
		_, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
		require.ErrorIs(t, err, npu.ErrModelLost)
		assert.Equal(t, "model_lost", npu.ErrorCode(err))
		loads, jobs := countsOf(e)
		assert.Equal(t, 2, loads)
		assert.Equal(t, 3, jobs)
		assert.Empty(t, r.Loaded())
	})
}

// Issue 28: embeddings, transcriptions, reloads and counts find a lost
// model the same way, and load it again through the lifecycle.
func TestOtherJobsLoadALostModelAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*Router) error
	}{
		{"embed", func(r *Router) error {
			_, err := r.Embed(context.Background(), npu.EmbedRequest{Model: "m", Inputs: []string{"x"}})
			return err
		}},
		{"transcribe", func(r *Router) error {
			out, err := r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "m", Samples: make([]float32, 16)})
			if err == nil && out.Text != "heard" {
				err = fmt.Errorf("heard %q", out.Text)
			}
			return err
		}},
		{"reload", func(r *Router) error {
			_, err := r.ReloadModel(context.Background(), "m")
			return err
		}},
		{"count", func(r *Router) error {
			n, err := r.CountPrompt(context.Background(), &npu.Request{Model: "m", Prompt: "count me"})
			if err == nil && n != 7 {
				err = fmt.Errorf("counted %d", n)
			}
			return err
		}},
	} {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			e := &losingEngine{}
			obs := &loadCounter{}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour, Observer: obs})
			_, err := r.LoadModel(context.Background(), "m", nil)
			require.NoError(t, err)
			e.die()
			require.NoError(t, tc.run(r))
			loads, _ := countsOf(e)
			assert.Equal(t, 2, loads, "loaded again")
			assert.Equal(t, 2, obs.count())
			require.Len(t, r.Loaded(), 1)
			assert.Zero(t, r.Loaded()[0].InUse)
		}))
	}
}

// The lifecycle forgets only the instance the job lost; the uses still
// held of it end without touching the next instance; a preloaded model is
// pinned again when it comes back.
func TestLifecycleLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &losingEngine{}
		l := newLifecycle(e, time.Hour, 0, slog.New(slog.DiscardHandler))
		var forgotten []string
		l.onUnload = func(model string) { forgotten = append(forgotten, model) }
		m := e.Models()[0]
		ctx := context.Background()

		_, err := l.acquire(ctx, m)
		require.NoError(t, err)
		before := time.Now()
		time.Sleep(time.Second)
		_, err = l.acquire(ctx, m) // a second holder
		require.NoError(t, err)
		assert.False(t, l.lost("m", before.Add(-time.Millisecond)), "a job that started before the load lost another instance")
		assert.True(t, l.lost("m", time.Now()))
		assert.False(t, l.lost("m", time.Now()), "once")
		assert.Equal(t, []string{"m"}, forgotten, "the scheduler forgets its cache")
		assert.False(t, l.isLoaded("m"))
		assert.Empty(t, l.list())

		_, err = l.acquire(ctx, m) // the next instance
		require.NoError(t, err)
		l.release("m", nil, false)
		l.release("m", nil, false) // the two lost uses end
		require.Len(t, l.list(), 1)
		assert.Equal(t, 1, l.list()[0].InUse, "the new instance's use still counts")
		l.release("m", dur(0), false)
		assert.Empty(t, l.list(), "its release unloads it")
		_, unloads, _ := e.counts()
		assert.Equal(t, 1, unloads, "lost asked the engine to unload nothing")

		_, err = l.acquire(ctx, m)
		require.NoError(t, err)
		l.markPreloaded("m")
		l.release("m", nil, false)
		assert.True(t, l.lost("m", time.Now()))
		_, err = l.acquire(ctx, m)
		require.NoError(t, err)
		l.release("m", dur(0), false)
		assert.True(t, l.preloaded("m"), "pinned again after the loss")
		l.close()
	})
}

func generateText(t *testing.T, r *Router) string {
	t.Helper()
	text, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
	require.NoError(t, err)
	return text
}

func countsOf(e *losingEngine) (loads, jobs int) {
	loads, _, jobs = e.counts()
	return loads, jobs
}

func loadingModels(r *Router) []string {
	var out []string
	for _, l := range r.Loading() {
		out = append(out, l.Model)
	}
	return out
}
