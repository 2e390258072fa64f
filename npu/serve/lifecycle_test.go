package serve

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// loadingEngine is a scripted engine that also loads and unloads models.
type loadingEngine struct {
	fakeEngine
	loadErr error

	loadMu  sync.Mutex
	loads   int
	unloads int
}

func (e *loadingEngine) Describe() npu.Features { return npu.Features{LoadsModels: true} }

func (e *loadingEngine) Load(ctx context.Context, model string) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.loads++
	return e.loadErr
}

func (e *loadingEngine) Unload(model string) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.unloads++
	return nil
}

func (e *loadingEngine) counts() (loads, unloads int) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	return e.loads, e.unloads
}

func dur(d time.Duration) *time.Duration { return &d }

func generateOnce(t *testing.T, r *Router, req *npu.Request) npu.Event {
	t.Helper()
	_, final, err := drain(t, start(t, r, req))
	require.NoError(t, err)
	return final
}

func TestLifecycleKeepAlive(t *testing.T) {
	tests := []struct {
		name        string
		keepAlive   *time.Duration
		wantLoaded  bool
		wantForever bool
	}{
		{"default keep-alive", nil, true, false},
		{"keep_alive 0 unloads", dur(0), false, false},
		{"negative keeps forever", dur(-1), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			e := &loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}
			r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour})
			generateOnce(t, r, &npu.Request{Model: "m", KeepAlive: tc.keepAlive})
			loaded := r.Loaded()
			if !tc.wantLoaded {
				assert.Empty(t, loaded)
				loads, unloads := e.counts()
				assert.Equal(t, 1, loads)
				assert.Equal(t, 1, unloads)
				return
			}
			require.Len(t, loaded, 1)
			assert.Equal(t, "m", loaded[0].Model.ID)
			if tc.wantForever {
				assert.True(t, loaded[0].ExpiresAt.IsZero())
			} else {
				assert.WithinDuration(t, time.Now().Add(time.Hour), loaded[0].ExpiresAt, time.Minute)
			}
			final := generateOnce(t, r, &npu.Request{Model: "m"})
			assert.Zero(t, final.Result.Timings.Load, "no load time when the model was loaded")
			loads, _ := e.counts()
			assert.Equal(t, 1, loads, "a loaded model is not loaded again")
		}))
	}
}

func TestLifecycleIdleModelsUnload(t *testing.T) { synctest.Test(t, testLifecycleIdleModelsUnload) }

func testLifecycleIdleModelsUnload(t *testing.T) {
	e := &loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: 20 * time.Millisecond})
	generateOnce(t, r, &npu.Request{Model: "m"})
	require.Len(t, r.Loaded(), 1)
	waitUntil(t, func() bool { return len(r.Loaded()) == 0 })
	_, unloads := e.counts()
	assert.Equal(t, 1, unloads)
}

func TestLoadAndUnloadModel(t *testing.T) { synctest.Test(t, testLoadAndUnloadModel) }

func testLoadAndUnloadModel(t *testing.T) {
	e := &loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour})
	_, err := r.LoadModel(context.Background(), "m", nil)
	require.NoError(t, err)
	require.Len(t, r.Loaded(), 1)
	require.NoError(t, r.UnloadModel(context.Background(), "m"))
	assert.Empty(t, r.Loaded())
	_, err = r.LoadModel(context.Background(), "nope", nil)
	require.ErrorIs(t, err, npu.ErrModelNotFound)
	assert.Zero(t, r.Running(), "loads give their slot back")
}

func TestLoadFailureFailsTheRequest(t *testing.T) {
	e := &loadingEngine{fakeEngine: fakeEngine{script: texts("a")}, loadErr: errors.New("no device")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	_, _, err := drain(t, start(t, r, &npu.Request{Model: "m"}))
	require.ErrorContains(t, err, "no device")
	assert.Zero(t, r.Running(), "the slot was released")
	assert.Empty(t, r.Loaded())
	assert.Zero(t, e.calls(), "no generation without a model")
}

// twoModelEngine serves models "m" and "n".
type twoModelEngine struct{ loadingEngine }

func (e *twoModelEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "m", ContextLength: 1000}, {ID: "n", ContextLength: 1000}}
}

func TestLifecycleCapEvictsTheLeastRecentlyUsed(t *testing.T) {
	synctest.Test(t, testLifecycleCapEvictsTheLeastRecentlyUsed)
}

func testLifecycleCapEvictsTheLeastRecentlyUsed(t *testing.T) {
	e := &twoModelEngine{loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour, MaxLoadedModels: 1})
	generateOnce(t, r, &npu.Request{Model: "m"})
	generateOnce(t, r, &npu.Request{Model: "n"})
	loaded := r.Loaded()
	require.Len(t, loaded, 1)
	assert.Equal(t, "n", loaded[0].Model.ID, "m was unloaded to make room")
	loads, unloads := e.counts()
	assert.Equal(t, 2, loads)
	assert.Equal(t, 1, unloads)

	uncapped := newTestRouter(t, &twoModelEngine{loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}},
		PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour})
	generateOnce(t, uncapped, &npu.Request{Model: "m"})
	generateOnce(t, uncapped, &npu.Request{Model: "n"})
	assert.Len(t, uncapped.Loaded(), 2)
}

func TestAliasesNameServedModels(t *testing.T) { synctest.Test(t, testAliasesNameServedModels) }

func testAliasesNameServedModels(t *testing.T) {
	e := &twoModelEngine{loadingEngine{fakeEngine: fakeEngine{script: texts("a")}}}
	r := newTestRouterWith(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour},
		RouterConfig{Aliases: map[string]string{"fast": "n", "ghost": "missing"}})
	m, err := r.Model("fast")
	require.NoError(t, err)
	assert.Equal(t, "n", m.ID, "the alias resolves to the served model")
	_, err = r.Model("ghost")
	require.ErrorIs(t, err, npu.ErrModelNotFound)

	var ids []string
	for _, m := range r.Models() {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"m", "n", "fast"}, ids, "aliases of served models are listed after them")

	generateOnce(t, r, &npu.Request{Model: "fast"})
	loaded := r.Loaded()
	require.Len(t, loaded, 1)
	assert.Equal(t, "n", loaded[0].Model.ID, "the engine ran the aliased model")
}

// twoModels serves "small" (loads at once) and "big" (its load waits for
// gate, like a minutes-long NPU compile); both generate n tokens.
type twoModels struct {
	npu.Unsupported
	gate  chan struct{}
	n     int
	loads atomic.Int32
}

func (e *twoModels) Name() string           { return "two" }
func (e *twoModels) Simulated() bool        { return true }
func (e *twoModels) Describe() npu.Features { return npu.Features{LoadsModels: true} }
func (e *twoModels) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "small", ContextLength: 1000}, {ID: "big", ContextLength: 1000}}
}
func (e *twoModels) Load(ctx context.Context, model string) error {
	e.loads.Add(1)
	if model == "big" {
		<-e.gate
	}
	return nil
}
func (e *twoModels) Unload(string) error { return nil }
func (e *twoModels) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	for i := range e.n {
		if sink("x") != npu.Running {
			return npu.Result{CompletionTokens: i + 1}, nil
		}
		time.Sleep(time.Millisecond)
	}
	return npu.Result{FinishReason: npu.FinishStop, CompletionTokens: e.n}, nil
}

// A model that takes long to load holds no engine slot meanwhile: other
// models' requests run and stream, and the big one runs once loaded.
func TestLoadingOneModelDoesNotStallOthers(t *testing.T) {
	synctest.Test(t, testLoadingOneModelDoesNotStallOthers)
}

func testLoadingOneModelDoesNotStallOthers(t *testing.T) {
	e := &twoModels{gate: make(chan struct{}), n: 20}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 8, DefaultKeepAlive: time.Minute})
	big := start(t, r, &npu.Request{Model: "big"})
	waitUntil(t, func() bool { return r.Waiting() == 0 }) // left the queue to load

	for range 3 {
		text, final, err := drain(t, start(t, r, &npu.Request{Model: "small"}))
		require.NoError(t, err, "small streams while big compiles")
		assert.Equal(t, 20, len(text))
		assert.True(t, final.Done)
	}
	// Loading through the API does not wait for anything either.
	took, err := r.LoadModel(t.Context(), "small", nil)
	require.NoError(t, err)
	assert.Zero(t, took, "already loaded")
	names := func() []string {
		var out []string
		for _, m := range r.Loaded() {
			out = append(out, m.Model.ID)
		}
		return out
	}
	assert.Equal(t, []string{"small"}, names(), "a model still loading is not listed")

	close(e.gate)
	text, final, err := drain(t, big)
	require.NoError(t, err)
	assert.Equal(t, 20, len(text))
	assert.Greater(t, final.Result.Timings.Load, time.Duration(0))
	assert.Equal(t, []string{"big", "small"}, names())
}

// Requests for a model being loaded wait for the one load.
func TestConcurrentRequestsShareOneLoad(t *testing.T) {
	synctest.Test(t, testConcurrentRequestsShareOneLoad)
}

func testConcurrentRequestsShareOneLoad(t *testing.T) {
	e := &twoModels{gate: make(chan struct{}), n: 3}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 8, DefaultKeepAlive: time.Minute})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.LoadModel(t.Context(), "big", nil)
			assert.NoError(t, err)
		}()
	}
	streams := []npu.Stream{start(t, r, &npu.Request{Model: "big"}), start(t, r, &npu.Request{Model: "big"})}
	time.Sleep(50 * time.Millisecond) // let them all reach the load
	close(e.gate)
	wg.Wait()
	for _, s := range streams {
		_, _, err := drain(t, s)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, e.loads.Load(), "one load for six callers")
}

// slowUnload is twoModels whose Unload blocks until released, as a worker's
// unload RPC may for its timeouts.
type slowUnload struct {
	twoModels
	unloading chan string   // told each unload as it starts
	proceed   chan struct{} // closed to let the unloads finish
	loadsOf   sync.Map      // model → *atomic.Int32
}

func (e *slowUnload) Load(ctx context.Context, model string) error {
	n, _ := e.loadsOf.LoadOrStore(model, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	return nil
}

func (e *slowUnload) Unload(model string) error {
	e.unloading <- model
	<-e.proceed
	return nil
}

func (e *slowUnload) loadCount(model string) int32 {
	n, _ := e.loadsOf.LoadOrStore(model, new(atomic.Int32))
	return n.(*atomic.Int32).Load()
}

// Issue 28 defect 3: the engine's Unload runs outside the lifecycle's
// lock: while one model unloads, other models are acquired and released
// and the loaded list answers; the model being unloaded is not listed,
// and a request for it waits for the unload and loads it again.
func TestUnloadDoesNotHoldTheLifecycle(t *testing.T) {
	e := &slowUnload{unloading: make(chan string, 4), proceed: make(chan struct{})}
	l := newLifecycle(e, time.Minute, 0, slog.New(slog.DiscardHandler))
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); fn() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a bound for a failure, not a timing
			t.Fatalf("%s waited for another model's unload", what)
		}
	}
	_, err := l.acquire(t.Context(), npu.ModelInfo{ID: "big"})
	require.NoError(t, err)
	unloaded := make(chan struct{})
	go func() {
		defer close(unloaded)
		l.release("big", dur(0), false) // keep_alive 0: unload now
	}()
	require.Equal(t, "big", <-e.unloading)

	within("listing the loaded models", func() { assert.Empty(t, l.list(), "a model going is not listed") })
	within("acquiring another model", func() {
		_, err := l.acquire(t.Context(), npu.ModelInfo{ID: "small"})
		assert.NoError(t, err)
		l.release("small", nil, false)
	})
	again := make(chan error, 1)
	go func() { _, err := l.acquire(t.Context(), npu.ModelInfo{ID: "big"}); again <- err }()
	close(e.proceed)
	<-unloaded
	require.NoError(t, <-again)
	assert.EqualValues(t, 2, e.loadCount("big"), "loaded again once its old instance was gone")
	assert.Len(t, l.list(), 2)
}

// embeddingLoader loads its models and embeds.
type embeddingLoader struct{ loadingEngine }

func (e *embeddingLoader) Describe() npu.Features {
	return npu.Features{LoadsModels: true, Embeds: true}
}

func (e *embeddingLoader) Embed(_ context.Context, _ string, inputs []string, _ bool) (npu.Embedded, error) {
	return npu.Embedded{Vectors: make([][]float32, len(inputs)), PromptTokens: len(inputs)}, nil
}

// An embedding loads its model through the lifecycle, as a generation
// does: the engine is asked to load it once, and the model is then listed
// as loaded (/api/ps) with its keep-alive, not used behind the lifecycle's
// back.
func TestEmbedLoadsThroughTheLifecycle(t *testing.T) {
	e := &embeddingLoader{}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4, DefaultKeepAlive: time.Hour})
	for range 2 {
		embedded, err := r.Embed(context.Background(), npu.EmbedRequest{Model: "m", Inputs: []string{"a", "b"}})
		require.NoError(t, err)
		require.Len(t, embedded.Vectors, 2)
	}
	loads, _ := e.counts()
	assert.Equal(t, 1, loads, "loaded once, then kept")
	require.Len(t, r.Loaded(), 1)
	assert.Equal(t, "m", r.Loaded()[0].Model.ID)
}
