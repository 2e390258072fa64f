package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/npud/npud/npu"
)

// lifecycle loads models on first use and unloads them when their
// keep-alive passes without a request.
type lifecycle struct {
	engine           npu.Engine
	defaultKeepAlive time.Duration
	maxLoaded        int // 0 = no cap; past it the least recently used idle model goes
	log              *slog.Logger
	onLoad           func(model string, took time.Duration) // set once before use; for metrics
	onUnload         func(model string)                     // set once before use; the scheduler forgets its cache
	// compileCache says whether a load compiles or imports a cached blob,
	// and learns the blobs a compile leaves; nil: not known.
	compileCache npu.CompileCache
	device       string // the configured device, for load progress ("" for AUTO)

	mu     sync.Mutex
	loaded map[string]*loadedEntry
	// orphans counts, by model, the uses still held of an instance the
	// engine lost (lost): their releases end those uses, not uses of the
	// instance loaded after it. Bounded by the models served.
	orphans map[string]int
	// repin holds the preloaded models the engine lost: their next load
	// is pinned again, as --preload asked.
	repin map[string]bool
}

type loadedEntry struct {
	npu.LoadedModel
	inUse    int
	lastUsed time.Time
	timer    *time.Timer
	// ready closes when the load finished; err (set before) is its
	// failure. Until then the entry counts as in use, so nothing unloads it.
	ready chan struct{}
	err   error
	// unloading is set while the engine unloads the model, and closed
	// when it is done: the entry stays listed as going, so nobody loads
	// the model again before its old instance is gone, and the lock is
	// never held across the engine's Unload (for a worker, a job's round
	// trip with timeouts of its own).
	unloading chan struct{}
	// loading describes the load while ready is open.
	loading npu.LoadStatus
	// lost is set when the engine lost the model (lost): the entry is no
	// longer listed, and the uses it still counts are orphans.
	lost bool
}

func (e *loadedEntry) isReady() bool {
	if e.unloading != nil {
		return false
	}
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false
	}
}

func newLifecycle(engine npu.Engine, defaultKeepAlive time.Duration, maxLoaded int, log *slog.Logger) *lifecycle {
	return &lifecycle{engine: engine, defaultKeepAlive: defaultKeepAlive, maxLoaded: maxLoaded, log: log,
		loaded: map[string]*loadedEntry{}, orphans: map[string]int{}, repin: map[string]bool{}}
}

// evictLocked makes room for one more model by starting to unload the
// least recently used idle ones; the caller runs the returned unloads
// after unlocking.
func (l *lifecycle) evictLocked() (unloads []func()) {
	for l.maxLoaded > 0 && l.residentLocked() >= l.maxLoaded {
		var victim string
		var oldest time.Time
		for name, e := range l.loaded {
			if e.unloading == nil && e.inUse == 0 && !e.Preloaded && (victim == "" || e.lastUsed.Before(oldest)) {
				victim, oldest = name, e.lastUsed
			}
		}
		if victim == "" {
			return unloads // every loaded model is busy or preloaded; load beyond the cap rather than fail
		}
		unloads = append(unloads, l.unloadLocked(victim, "least recently used, over the loaded-model cap"))
	}
	return unloads
}

// residentLocked counts the models loaded or loading, not those going.
func (l *lifecycle) residentLocked() int {
	n := 0
	for _, e := range l.loaded {
		if e.unloading == nil {
			n++
		}
	}
	return n
}

// runUnloads runs unloads started under the lock, after it was released.
func runUnloads(unloads ...func()) {
	for _, u := range unloads {
		if u != nil {
			u()
		}
	}
}

// acquire makes sure model is loaded and marks it in use; it returns how
// long loading took (zero when it was loaded already). The load runs
// without the lifecycle's lock, so requests for other models, and their
// streams, go on while one model compiles (minutes, on an NPU); callers
// that want the same model wait for the one load.
func (l *lifecycle) acquire(ctx context.Context, info npu.ModelInfo) (time.Duration, error) {
	l.mu.Lock()
	for {
		e, ok := l.loaded[info.ID]
		if !ok || e.unloading == nil {
			break
		}
		// Its old instance is still being unloaded: load it again after.
		l.mu.Unlock()
		select {
		case <-e.unloading:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		l.mu.Lock()
	}
	if e, ok := l.loaded[info.ID]; ok {
		e.inUse++
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
		l.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			l.release(info.ID, nil, false)
			return 0, context.Cause(ctx)
		}
		if e.err != nil {
			return 0, e.err // the loader removed the entry
		}
		return 0, nil
	}
	unloads := l.evictLocked()
	e := &loadedEntry{LoadedModel: npu.LoadedModel{Model: info, Preloaded: l.repin[info.ID]}, inUse: 1, ready: make(chan struct{}),
		loading: npu.LoadStatus{Model: info.ID, Device: l.device, Since: time.Now()}}
	delete(l.repin, info.ID)
	l.loaded[info.ID] = e
	l.mu.Unlock()
	runUnloads(unloads...) // the evicted models leave before this one comes

	start := time.Now()
	var err error
	if l.engine.Describe().LoadsModels {
		tracked := func(error) {}
		if l.compileCache != nil {
			state := l.compileCache.State(info.ID) // reads the cache folder: outside the lock
			l.mu.Lock()
			e.loading.Compile = state
			l.mu.Unlock()
			tracked = l.compileCache.Track(info.ID)
		}
		// Others may wait for this load: the first caller leaving must
		// not abort it (a compile cannot be interrupted anyway).
		err = l.engine.Load(context.WithoutCancel(ctx), info.ID)
		tracked(err)
	}
	took := time.Since(start)
	l.mu.Lock()
	if err != nil {
		e.err = fmt.Errorf("loading model %q: %w", info.ID, err)
		if l.loaded[info.ID] == e {
			delete(l.loaded, info.ID)
		}
	}
	e.LoadedAt = time.Now()
	close(e.ready)
	l.mu.Unlock()
	if err != nil {
		return 0, e.err
	}
	l.log.Info("model loaded", "model", info.ID, "load", took)
	if l.onLoad != nil {
		l.onLoad(info.ID, took)
	}
	return took, nil
}

// loadStatus describes model's load while it is in progress.
func (l *lifecycle) loadStatus(model string) (npu.LoadStatus, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loaded[model]
	if !ok || isClosed(e.ready) {
		return npu.LoadStatus{}, false
	}
	return e.loading, true
}

// loads lists the loads in progress, by model.
func (l *lifecycle) loads() []npu.LoadStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []npu.LoadStatus
	for _, e := range l.loaded {
		if !isClosed(e.ready) {
			out = append(out, e.loading)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// isLoaded reports whether model is loaded and ready.
func (l *lifecycle) isLoaded(model string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loaded[model]
	return ok && e.isReady()
}

// reload rebuilds a loaded model in place; a model that is not loaded is
// loaded, with the default keep-alive. The caller holds the engine slot.
func (l *lifecycle) reload(ctx context.Context, info npu.ModelInfo) error {
	if !l.isLoaded(info.ID) {
		if _, err := l.acquire(ctx, info); err != nil {
			return err
		}
		l.release(info.ID, nil, false)
		return nil
	}
	if !l.engine.Describe().Reloads {
		return fmt.Errorf("model %q: engine %s cannot reload a model: %w", info.ID, l.engine.Name(), npu.ErrNotSupported)
	}
	if e := l.pin(info.ID); e != nil {
		defer l.unpin(info.ID, e)
	}
	start := time.Now()
	tracked := func(error) {}
	if l.compileCache != nil {
		tracked = l.compileCache.Track(info.ID) // files changed on disk compile anew
	}
	err := l.engine.Reload(ctx, info.ID)
	tracked(err)
	if errors.Is(err, npu.ErrModelLost) {
		return fmt.Errorf("reloading model %q: %w", info.ID, err) // nothing keeps serving
	}
	if err != nil {
		return fmt.Errorf("reloading model %q (the loaded one keeps serving): %w", info.ID, err)
	}
	took := time.Since(start)
	l.log.Info("model reloaded", "model", info.ID, "load", took)
	if l.onLoad != nil {
		l.onLoad(info.ID, took)
	}
	return nil
}

// release ends a use of model and starts its keep-alive: nil means the
// default, negative keeps it loaded, zero unloads it now. A preloaded
// model stays loaded whatever the keep-alive, unless mayUnpin and the
// keep-alive is zero: the operator pinned it, a request's keep_alive
// (explicit or the default) must not unpin it.
func (l *lifecycle) release(model string, keepAlive *time.Duration, mayUnpin bool) {
	l.mu.Lock()
	unload := l.releaseLocked(model, keepAlive, mayUnpin)
	l.mu.Unlock()
	runUnloads(unload)
}

func (l *lifecycle) releaseLocked(model string, keepAlive *time.Duration, mayUnpin bool) (unload func()) {
	if l.releaseOrphanLocked(model) {
		return nil
	}
	e, ok := l.loaded[model]
	if !ok || e.unloading != nil {
		return nil
	}
	e.inUse = max(e.inUse-1, 0)
	e.lastUsed = time.Now()
	ka := l.defaultKeepAlive
	if keepAlive != nil {
		ka = *keepAlive
	}
	if e.inUse > 0 {
		return nil
	}
	if e.Preloaded && !(mayUnpin && ka == 0) {
		e.ExpiresAt = time.Time{}
		return nil
	}
	switch {
	case ka < 0:
		e.ExpiresAt = time.Time{}
	case ka == 0:
		return l.unloadLocked(model, "keep_alive 0")
	default:
		e.ExpiresAt = time.Now().Add(ka)
		e.timer = time.AfterFunc(ka, func() { l.expire(model, e) })
	}
	return nil
}

// expire unloads model if entry is still the loaded one and idle.
func (l *lifecycle) expire(model string, entry *loadedEntry) {
	l.mu.Lock()
	var unload func()
	if l.loaded[model] == entry && entry.unloading == nil && entry.inUse == 0 && !entry.ExpiresAt.IsZero() && !time.Now().Before(entry.ExpiresAt) {
		unload = l.unloadLocked(model, "keep_alive expired")
	}
	l.mu.Unlock()
	runUnloads(unload)
}

// unload removes model now unless it is in use; it reports whether the
// model was loaded.
func (l *lifecycle) unload(model string) bool {
	l.mu.Lock()
	delete(l.repin, model) // unloaded on purpose: its pin goes too
	e, ok := l.loaded[model]
	if !ok || e.inUse > 0 || e.unloading != nil {
		l.mu.Unlock()
		return ok
	}
	unload := l.unloadLocked(model, "requested")
	l.mu.Unlock()
	runUnloads(unload)
	return true
}

// evict unloads model whether or not requests hold it (they will find it
// gone), after a load in progress has finished. The caller holds the
// engine slot, so no generation runs on it.
func (l *lifecycle) evict(ctx context.Context, model, why string) error {
	l.mu.Lock()
	delete(l.repin, model)
	l.mu.Unlock()
	for {
		l.mu.Lock()
		e, ok := l.loaded[model]
		if !ok {
			l.mu.Unlock()
			return nil
		}
		if e.unloading != nil {
			l.mu.Unlock()
			select { // going already
			case <-e.unloading:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("model %q is still unloading: %w", model, ctx.Err())
			}
		}
		select {
		case <-e.ready:
			unload := l.unloadLocked(model, why)
			l.mu.Unlock()
			runUnloads(unload)
			return nil
		default:
		}
		l.mu.Unlock()
		// Unloading a model that is still compiling would leave the new
		// pipeline behind, held by nobody: wait for the load to end.
		select {
		case <-e.ready:
		case <-ctx.Done():
			return fmt.Errorf("model %q is still loading: %w", model, ctx.Err())
		}
	}
}

// markPreloaded pins model against every keep-alive (see release).
func (l *lifecycle) markPreloaded(model string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.loaded[model]; ok && e.unloading == nil {
		e.Preloaded = true
		e.ExpiresAt = time.Time{}
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
	}
}

// preloaded reports whether model is loaded and pinned by --preload.
func (l *lifecycle) preloaded(model string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loaded[model]
	return ok && e.unloading == nil && e.Preloaded
}

// pin keeps model loaded until unpin: a reload in progress must not be
// unloaded by its keep-alive, or the engine would be left with a compiled
// pipeline the lifecycle no longer lists and nobody unloads.
func (l *lifecycle) pin(model string) *loadedEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loaded[model]
	if !ok || e.unloading != nil {
		return nil
	}
	e.inUse++
	return e
}

// unpin ends a pin and re-arms the keep-alive the pin held back.
func (l *lifecycle) unpin(model string, e *loadedEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.lost {
		l.releaseOrphanLocked(model) // the pin was a use of the lost instance
		return
	}
	if l.loaded[model] != e || e.unloading != nil {
		return
	}
	e.inUse = max(e.inUse-1, 0)
	if e.inUse == 0 && !e.ExpiresAt.IsZero() {
		if e.timer != nil {
			e.timer.Stop()
		}
		e.timer = time.AfterFunc(max(time.Until(e.ExpiresAt), 0), func() { l.expire(model, e) })
	}
}

// lost forgets model, which the engine lost (its worker died: an error
// wrapping ErrModelLost) during a job that started at since. The entry
// goes as if unloaded: not listed, its keep-alive stopped, the
// scheduler's cache of it forgotten; the next acquire loads the model
// again, as any load. The engine is not asked to unload what it no longer
// holds: it may be loading the next instance by then. An entry loaded
// after since, or loading, or going, is not the one the job lost, and
// stays. The uses still held of the lost entry become orphans, ended by
// their holders' releases. A preloaded model's next load is pinned
// again. It reports whether model was forgotten.
func (l *lifecycle) lost(model string, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loaded[model]
	if !ok || !e.isReady() || e.LoadedAt.After(since) {
		return false
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	delete(l.loaded, model)
	e.lost = true
	if e.inUse > 0 {
		l.orphans[model] += e.inUse
	}
	if e.Preloaded {
		l.repin[model] = true
	}
	if l.onUnload != nil {
		l.onUnload(model)
	}
	l.log.Warn("the engine lost a model; the next request loads it again", "model", model)
	return true
}

// releaseOrphanLocked ends one use of a lost instance of model, if any is
// held; it reports whether it did.
func (l *lifecycle) releaseOrphanLocked(model string) bool {
	n := l.orphans[model]
	switch {
	case n <= 0:
		return false
	case n == 1:
		delete(l.orphans, model)
	default:
		l.orphans[model] = n - 1
	}
	return true
}

// unloadLocked marks model as going and returns what unloads it, which
// the caller runs after unlocking: the engine's Unload (for a worker, a
// job's round trip with timeouts) never runs under the lock, so acquires,
// releases and /api/ps of other models go on meanwhile.
func (l *lifecycle) unloadLocked(model, why string) (unload func()) {
	e := l.loaded[model]
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.unloading = make(chan struct{})
	if l.onUnload != nil {
		l.onUnload(model)
	}
	return func() {
		if l.engine.Describe().LoadsModels {
			if err := l.engine.Unload(model); err != nil {
				l.log.Warn("unloading model failed", "model", model, "err", err)
			}
		}
		l.mu.Lock()
		if l.loaded[model] == e {
			delete(l.loaded, model)
		}
		close(e.unloading)
		l.mu.Unlock()
		l.log.Info("model unloaded", "model", model, "reason", why)
	}
}

// list returns the loaded models by name.
func (l *lifecycle) list() []npu.LoadedModel {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]npu.LoadedModel, 0, len(l.loaded))
	for _, e := range l.loaded {
		if e.isReady() { // a model still loading (or going) is not listed
			lm := e.LoadedModel
			lm.InUse = e.inUse
			out = append(out, lm)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model.ID < out[j].Model.ID })
	return out
}

// close stops every keep-alive timer.
func (l *lifecycle) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.loaded {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
}
