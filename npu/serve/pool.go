package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/jsonschema"
)

// PoolConfig sets the limits of a Pool.
type PoolConfig struct {
	MaxQueue     int           // waiting requests beyond the running one; 0 = none wait
	QueueTimeout time.Duration // longest wait for the engine; 0 = no limit
	Stream       StreamLimits
	// DefaultKeepAlive is how long a model stays loaded after its last
	// request when the request does not say; negative = forever, zero =
	// unload after every request.
	DefaultKeepAlive time.Duration
	// MaxLoadedModels caps the models in memory; loading one more unloads
	// the least recently used idle one. 0 = no cap.
	MaxLoadedModels int
	// Observer hears about loads, token gaps and generations, for
	// metrics; nil = none.
	Observer npu.Observer
	// Slots is how many generations run at once; 0 means 1. Only an
	// engine that can run concurrent generations (the simulated one) may
	// have more: a GenAI pipeline runs one generate at a time.
	Slots int
	// Models is the models folder the engine serves from, which the
	// daemon owns: pulls, copies and deletions go to it. nil: the engine
	// serves a fixed set of models (the simulated one, an upstream).
	Models npu.Registry
	// Store takes the pulls of an engine without a models folder of its
	// own (the simulated engine): the folder belongs to the daemon, so a
	// pull works whatever engine serves. nil: such an engine refuses.
	Store npu.Registry
	// Affinity lets a request that continues its model's cached
	// conversation go first, within fairness bounds (see Scheduler); the
	// zero value is plain FIFO.
	Affinity Affinity
	// CompileCache tells loads that compile from scratch from loads that
	// import a cached blob, for the progress clients see; nil: not known.
	CompileCache npu.CompileCache
	// Device is the configured device, named in load progress ("" or
	// "AUTO": picked during the load).
	Device string
}

// Pool runs the work of one engine: it queues requests in a Scheduler,
// keeps the engine's models resident through the lifecycle, and runs each
// generation in its own goroutine. It knows nothing of tenants, aliases or
// other engines: the Router in front resolves the model, admits the work
// and picks the pool, and hands the pool a model it serves.
type Pool struct {
	engine npu.Engine
	sched  *Scheduler
	life   *lifecycle
	cfg    PoolConfig
	log    *slog.Logger

	base     context.Context // parent of every stream; cancelled by abort
	cancel   context.CancelCauseFunc
	closing  atomic.Bool
	inflight sync.WaitGroup // engine goroutines
}

// NewPool returns a pool for engine.
func NewPool(engine npu.Engine, cfg PoolConfig, log *slog.Logger) *Pool {
	base, cancel := context.WithCancelCause(context.Background())
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	p := &Pool{
		engine: engine,
		sched:  NewAffinityScheduler(max(cfg.Slots, 1), cfg.MaxQueue, cfg.Affinity),
		life:   newLifecycle(engine, cfg.DefaultKeepAlive, cfg.MaxLoadedModels, log),
		cfg:    cfg,
		log:    log,
		base:   base,
		cancel: cancel,
	}
	p.life.onLoad = func(model string, took time.Duration) {
		cfg.Observer.ModelLoaded(model, p.deviceOf(model), took)
	}
	p.life.onUnload = p.sched.Forget // a new pipeline's cache starts empty
	p.life.compileCache = cfg.CompileCache
	if cfg.Device != "AUTO" {
		p.life.device = cfg.Device
	}
	return p
}

// Engine is the engine this pool drives.
func (p *Pool) Engine() npu.Engine { return p.engine }

// Waiting is the number of requests queued for the engine.
func (p *Pool) Waiting() int { return p.sched.Waiting() }

// Running is the number of generations the engine is running.
func (p *Pool) Running() int { return p.sched.Running() }

// find looks id up among the engine's own models (no aliases: they are
// the router's). It asks the engine each time: a pull or delete changes
// its list.
func (p *Pool) find(id string) (npu.ModelInfo, bool) {
	for _, m := range p.engine.Models() {
		if m.ID == id {
			return m, true
		}
	}
	return npu.ModelInfo{}, false
}

// start queues req, already resolved to m and admitted, and returns its
// stream at once, its answer held to format (nil: none); done runs once
// when the generation ends (client or not), before a reader can see the
// end, or at once when start fails.
func (p *Pool) start(req *npu.Request, m npu.ModelInfo, format *jsonschema.Schema, done func()) (*Stream, error) {
	if p.closing.Load() {
		done()
		return nil, npu.ErrShuttingDown
	}
	clamped, err := p.limitCompletion(req, m)
	if err != nil {
		done()
		return nil, err
	}
	ticket, err := p.sched.EnqueueConversation(m.ID, req.Messages)
	if err != nil {
		done()
		return nil, err
	}
	s := newStream(p.base, req, p.cfg.Stream, p.cfg.Observer)
	s.clamped = clamped
	s.speak(m.Details.ToolFormat)
	if format != nil {
		s.doc = &document{m: format.NewMatcher()}
	}
	// The stream runs done as it finishes, before its end is visible; the
	// goroutine's call covers a run that never reached finish.
	s.ended = sync.OnceFunc(done)
	p.inflight.Add(1)
	go func() {
		defer s.ended()
		p.run(s, ticket, m) // its end is reported by the stream (Stream.finish)
	}()
	return s, nil
}

// limitCompletion applies CompletionLimit to req when the engine can count
// its prompt: it returns the limit req.MaxTokens was lowered to (0 when it
// was not), or the error for a prompt that leaves no room.
func (p *Pool) limitCompletion(req *npu.Request, m npu.ModelInfo) (clamped int, err error) {
	prompt, ok := p.engine.PromptTokens(req)
	if !ok || m.ContextLength <= 0 {
		return 0, nil
	}
	limit, lowered, err := npu.CompletionLimit(req.MaxTokens, prompt, npu.RequestContext(req, m.ContextLength))
	if err != nil || !lowered {
		return 0, err
	}
	req.MaxTokens = limit
	return limit, nil
}

// run waits for the engine, generates, and reports the end to the stream.
// A model that must be loaded first is loaded outside the queue: the
// request leaves its place, loads, and queues again, so a long compile
// never holds the engine slot that other models' streams need.
func (p *Pool) run(s *Stream, ticket *Ticket, model npu.ModelInfo) {
	defer p.inflight.Done()
	var loadTime time.Duration
	pinned := false
	if p.engine.Describe().LoadsModels && !p.life.isLoaded(model.ID) {
		ticket.abandon()
		var err error
		if loadTime, err = p.acquireShowingLoad(s, model); err != nil {
			s.finish(npu.Result{}, err)
			return
		}
		pinned = true
		if ticket, err = p.sched.EnqueueConversation(model.ID, s.req.Messages); err != nil {
			p.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
			s.finish(npu.Result{}, err)
			return
		}
	}
	if err := ticket.Wait(s.ctx, p.cfg.QueueTimeout); err != nil {
		if pinned {
			p.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
		}
		s.finish(npu.Result{}, err)
		return
	}
	if !pinned {
		// Loaded a moment ago; acquire only pins it (or, if it was
		// evicted meanwhile, loads it again).
		var err error
		if loadTime, err = p.acquireShowingLoad(s, model); err != nil {
			ticket.Release()
			s.finish(npu.Result{}, err)
			return
		}
	}
	s.begin(p.deviceOf(model.ID))
	res, err := p.generateResident(s, model, &loadTime)
	p.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
	ticket.Release()
	res.Timings.Load = loadTime
	if err == nil {
		p.cfg.Observer.Prefill(model.ID, ticket.CacheHint, max(res.PromptTokens-res.CachedPromptTokens, 0), res.CachedPromptTokens)
	}
	s.finish(res, err)
}

// acquireShowingLoad acquires model for s; while it loads, s's heartbeats
// say how the load goes.
func (p *Pool) acquireShowingLoad(s *Stream, model npu.ModelInfo) (time.Duration, error) {
	s.watchLoad(func() (npu.LoadStatus, bool) { return p.life.loadStatus(model.ID) })
	defer s.watchLoad(nil)
	return p.life.acquire(s.ctx, model)
}

// hold keeps m loaded for a job without a stream (an embedding, a
// transcription): loaded through the lifecycle, outside the engine's slot,
// as for a generation, when the engine loads models; release ends the use
// and starts the model's default keep-alive.
func (p *Pool) hold(ctx context.Context, m npu.ModelInfo) (release func(), err error) {
	return p.holdFor(ctx, m, nil, false)
}

// holdFor is hold whose release starts keepAlive (nil: the default) as a
// generation's does, mayUnpin as npu.Request's.
func (p *Pool) holdFor(ctx context.Context, m npu.ModelInfo, keepAlive *time.Duration, mayUnpin bool) (release func(), err error) {
	if !p.engine.Describe().LoadsModels {
		return func() {}, nil
	}
	if _, err := p.life.acquire(ctx, m); err != nil {
		return nil, err
	}
	return func() { p.life.release(m.ID, keepAlive, mayUnpin) }, nil
}

// generate calls the engine, turning a panic into an error so one bad
// request cannot take the daemon down.
func (p *Pool) generate(s *Stream) (res npu.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("engine panicked", "engine", p.engine.Name(), "panic", v)
			err = &npu.EngineError{Engine: p.engine.Name(), Cause: fmt.Errorf("%w: %v", npu.ErrPanic, v)}
		}
	}()
	return p.engine.Generate(s.ctx, s.req, s.sink)
}

// compileState says how loading m would go: a first compile, a cached
// blob, or not known.
func (p *Pool) compileState(m npu.ModelInfo) npu.CompileState {
	if p.cfg.CompileCache == nil || !p.engine.Describe().LoadsModels {
		return npu.CompileUnknown
	}
	return p.cfg.CompileCache.State(m.ID)
}

// load loads m and starts its keep-alive (nil: the default, negative:
// forever, zero: unload at once). No engine slot: loading one model does
// not stop others' streams.
func (p *Pool) load(ctx context.Context, m npu.ModelInfo, keepAlive *time.Duration) (time.Duration, error) {
	if p.closing.Load() {
		return 0, npu.ErrShuttingDown
	}
	took, err := p.life.acquire(ctx, m)
	if err == nil {
		p.life.release(m.ID, keepAlive, false)
	}
	return took, err
}

// preload loads m and pins it against every request's keep_alive.
func (p *Pool) preload(ctx context.Context, m npu.ModelInfo) (time.Duration, error) {
	took, err := p.life.acquire(ctx, m)
	if err != nil {
		return 0, err
	}
	p.life.markPreloaded(m.ID)
	p.life.release(m.ID, nil, false)
	return took, nil
}

// reload replaces m with a fresh instance once the streams ahead of it
// have finished (it waits for the engine slot like any request).
func (p *Pool) reload(ctx context.Context, m npu.ModelInfo) (time.Duration, error) {
	var took time.Duration
	err := p.withSlot(ctx, func() error {
		start := time.Now()
		err := p.reloadResident(ctx, m)
		took = time.Since(start)
		if err == nil {
			p.sched.Forget(m.ID) // the new pipeline's cache starts empty
		}
		return err
	})
	return took, err
}

// unload unloads m once the engine is free.
func (p *Pool) unload(ctx context.Context, m npu.ModelInfo) error {
	return p.withSlot(ctx, func() error {
		p.life.unload(m.ID)
		return nil
	})
}

// withSlot runs fn while holding the engine's slot, so loads, unloads and
// the work that is not a generation never overlap a generation.
func (p *Pool) withSlot(ctx context.Context, fn func() error) error {
	if p.closing.Load() {
		return npu.ErrShuttingDown
	}
	ticket, err := p.sched.Enqueue()
	if err != nil {
		return err
	}
	if err := ticket.Wait(ctx, p.cfg.QueueTimeout); err != nil {
		return err
	}
	defer ticket.Release()
	return fn()
}

// deviceOf names the device model runs on: the engine's answer, or
// "simulated" for the simulated engine.
func (p *Pool) deviceOf(model string) string {
	if d := p.engine.DeviceOf(model); d != "" {
		return d
	}
	if p.engine.Simulated() {
		return "simulated"
	}
	return ""
}

// overloaded: a new request would wait longer than bound for the engine,
// or could not queue at all.
func (p *Pool) overloaded(bound time.Duration) bool {
	return p.sched.Full() || p.sched.EstimatedWait() > bound
}

// modelNames lists the engine's models, for errors.
func (p *Pool) modelNames() string {
	models := p.engine.Models()
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.ID
	}
	return strings.Join(names, ", ")
}

// stopAccepting makes the pool refuse new work with ErrShuttingDown.
func (p *Pool) stopAccepting() { p.closing.Store(true) }

// abort ends every stream with ErrShuttingDown; engines see Cancel at their
// next callback.
func (p *Pool) abort() { p.cancel(npu.ErrShuttingDown) }

// wait blocks until every engine call has returned, or ctx ends; then it
// stops the keep-alive timers.
func (p *Pool) wait(ctx context.Context) error {
	defer p.life.close()
	done := make(chan struct{})
	go func() {
		p.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for engine calls to return: %w", context.Cause(ctx))
	}
}

// released runs r.Release, if any.
func released(r *npu.Request) {
	if r.Release != nil {
		r.Release()
	}
}
