package npu

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// RunnerConfig sets the limits of a Runner.
type RunnerConfig struct {
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
	// Aliases maps extra names to served models ("llama" → "Llama-3.2-1B-int4-ov").
	Aliases map[string]string
	// Observer hears about loads and token gaps, for metrics; nil = none.
	Observer Observer
	// Slots is how many generations run at once; 0 means 1. Only an
	// engine that can run concurrent generations (the simulated one) may
	// have more: a GenAI pipeline runs one generate at a time.
	Slots int
	// Models is the models folder the engine serves from, which the
	// daemon owns: pulls, copies and deletions go to it. nil: the engine
	// serves a fixed set of models (the simulated one, an upstream).
	Models Registry
	// Store takes the pulls of an engine without a models folder of its
	// own (the simulated engine): the folder belongs to the daemon, so a
	// pull works whatever engine serves. nil: such an engine refuses.
	Store Registry
	// Affinity lets a request that continues its model's cached
	// conversation go first, within fairness bounds (see Scheduler); the
	// zero value is plain FIFO.
	Affinity Affinity
	// CompileCache tells loads that compile from scratch from loads that
	// import a cached blob, for the progress clients see; nil: not known.
	CompileCache CompileCache
	// Device is the configured device, named in load progress ("" or
	// "AUTO": picked during the load).
	Device string
}

// Runner admits requests to one engine: it queues them in a Scheduler, runs
// the engine for each in its own goroutine, and hands the caller a Stream.
type Runner struct {
	engine Engine
	sched  *Scheduler
	life   *lifecycle
	cfg    RunnerConfig
	log    *slog.Logger

	base     context.Context // parent of every stream; cancelled by Abort
	abort    context.CancelCauseFunc
	closing  atomic.Bool
	inflight sync.WaitGroup // engine goroutines
	// tenants counts generations per tenant, for the stream cap; the
	// upstreams' runners share their router's (SetRouting), so a tenant's
	// cap holds whichever engine runs its generations.
	tenants *tenantStreams
	routing Routing // upstreams; set before serving
}

// NewRunner returns a runner for engine.
func NewRunner(engine Engine, cfg RunnerConfig, log *slog.Logger) *Runner {
	base, abort := context.WithCancelCause(context.Background())
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	r := &Runner{
		engine:  engine,
		sched:   NewAffinityScheduler(max(cfg.Slots, 1), cfg.MaxQueue, cfg.Affinity),
		life:    newLifecycle(engine, cfg.DefaultKeepAlive, cfg.MaxLoadedModels, log),
		cfg:     cfg,
		log:     log,
		base:    base,
		abort:   abort,
		tenants: &tenantStreams{},
	}
	r.life.onLoad = func(model string, took time.Duration) {
		cfg.Observer.ModelLoaded(model, r.DeviceOf(model), took)
	}
	r.life.onUnload = r.sched.Forget // a new pipeline's cache starts empty
	r.life.compileCache = cfg.CompileCache
	if cfg.Device != "AUTO" {
		r.life.device = cfg.Device
	}
	return r
}

// Engine is the engine this runner drives.
func (r *Runner) Engine() Engine { return r.engine }

// Model looks a model up by id or alias and returns the model the engine
// serves; the error wraps ErrModelNotFound. It asks the engine each time: a
// pull or delete changes its list.
func (r *Runner) Model(id string) (ModelInfo, error) { return r.owner(id).localModel(id) }

// localModel is Model among this runner's own engine's models.
func (r *Runner) localModel(id string) (ModelInfo, error) {
	target := id
	if t, ok := r.cfg.Aliases[id]; ok {
		target = t
	}
	for _, m := range r.engine.Models() {
		if m.ID == target {
			return m, nil
		}
	}
	return ModelInfo{}, fmt.Errorf("model %q: %w", id, ErrModelNotFound)
}

// Models lists the models served, in the engine's order, then the aliases
// whose model is served, by name.
func (r *Runner) Models() []ModelInfo {
	models := r.engine.Models()
	names := make([]string, 0, len(r.cfg.Aliases))
	for alias := range r.cfg.Aliases {
		names = append(names, alias)
	}
	sort.Strings(names)
	out := append([]ModelInfo(nil), models...)
	for _, alias := range names {
		if m, err := r.localModel(alias); err == nil {
			m.ID = alias
			out = append(out, m)
		}
	}
	// Then what only upstreams serve.
	for _, up := range r.routing.Upstreams {
		for _, m := range up.Runner.Models() {
			if _, err := r.localModel(m.ID); err != nil && !containsModel(out, m.ID) {
				out = append(out, m)
			}
		}
	}
	return out
}

func containsModel(models []ModelInfo, id string) bool {
	for _, m := range models {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Start admits req and returns its stream at once; the stream's first events
// may be heartbeats while the request waits its turn. Errors: the model is
// unknown (ErrModelNotFound), the queue is full (ErrQueueFull), or the runner
// is draining (ErrShuttingDown). The caller must Close the stream.
func (r *Runner) Start(req *Request) (*Stream, error) {
	if r.closing.Load() {
		return nil, ErrShuttingDown
	}
	if s, routed, err := r.route(req); routed {
		return s, err
	}
	m, err := r.localModel(req.Model)
	if err != nil {
		return nil, err
	}
	req.Model = m.ID // an alias names the model the engine knows
	if err := CheckGenerates(m); err != nil {
		return nil, err
	}
	if req.Think != nil && *req.Think && !m.Details.Thinking {
		return nil, &InvalidRequestError{Param: "think", Message: fmt.Sprintf(
			"model %q does not support thinking: its chat template takes no enable_thinking and opens no <think>", m.ID)}
	}
	if err := fitTools(req, m); err != nil {
		return nil, err
	}
	req.Normalize()
	clamped, err := r.limitCompletion(req, m)
	if err != nil {
		return nil, err
	}
	release, err := r.AdmitStream(req.Tenant)
	if err != nil {
		return nil, err
	}
	ticket, err := r.sched.EnqueueConversation(req.Model, req.Messages)
	if err != nil {
		release()
		return nil, err
	}
	s := newStream(r.base, req, r.cfg.Stream, r.cfg.Observer)
	s.clamped = clamped
	if len(req.Tools) > 0 {
		s.parseToolCalls(m.Details.ToolFormat)
	}
	r.inflight.Add(1)
	go func() {
		defer release()  // a generation counts until it ends, client or not
		r.run(s, ticket) // its end is reported by the stream (Stream.finish)
	}()
	return s, nil
}

// limitCompletion applies CompletionLimit to req when the engine can count
// its prompt: it returns the limit req.MaxTokens was lowered to (0 when it
// was not), or the error for a prompt that leaves no room.
func (r *Runner) limitCompletion(req *Request, m ModelInfo) (clamped int, err error) {
	prompt, ok := r.engine.PromptTokens(req)
	if !ok || m.ContextLength <= 0 {
		return 0, nil
	}
	limit, lowered, err := CompletionLimit(req.MaxTokens, prompt, m.ContextLength)
	if err != nil || !lowered {
		return 0, err
	}
	req.MaxTokens = limit
	return limit, nil
}

// fitTools checks that model m can do what req asks of tools and images,
// and narrows the tools the model sees to what the tool choice allows.
func fitTools(req *Request, m ModelInfo) error {
	if req.ToolChoice.Mode == ToolChoiceNone {
		req.Tools = nil // the model is not told of them, so it calls none
	}
	if len(req.Tools) > 0 && m.Details.ToolFormat == "" {
		return &InvalidRequestError{Param: "tools", Message: fmt.Sprintf(
			"model %q does not support tools: its chat template renders no tool definitions", m.ID)}
	}
	if req.ToolChoice.Mode == ToolChoiceFunction {
		// The model sees only the function it must call.
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Name {
				req.Tools = []Tool{t}
				break
			}
		}
	}
	for _, msg := range req.Messages {
		if len(msg.Images) > 0 {
			return CheckVision(m)
		}
	}
	return nil
}

// CheckVision refuses images for a model without a vision encoder. The
// APIs ask it before decoding or fetching any image.
func CheckVision(m ModelInfo) error {
	if !m.Details.Vision {
		return &InvalidRequestError{Param: "images", Message: fmt.Sprintf(
			"model %q does not support images: its folder holds no vision encoder", m.ID)}
	}
	return nil
}

// AdmitStream counts work for tenant that is no generation (an
// embedding) against its stream cap, with its generations; release ends
// it. The error wraps ErrTooManyStreams.
func (r *Runner) AdmitStream(tenant string) (release func(), err error) {
	release, ok := r.tenants.open(tenant)
	if !ok {
		r.cfg.Observer.Refused(tenant, ErrTooManyStreams)
		return nil, fmt.Errorf("tenant %q already runs or queues %d generations: %w", tenant, r.tenants.limit(), ErrTooManyStreams)
	}
	return release, nil
}

// SetStreamCap sets how many generations one tenant may run or queue at
// once (0 = no cap); generations already counted stay counted.
func (r *Runner) SetStreamCap(n int) { r.tenants.setLimit(n) }

// tenantStreams counts each tenant's generations. The map holds only
// tenants with a generation running, so it is bounded by them.
type tenantStreams struct {
	mu     sync.Mutex
	max    int
	counts map[string]int
}

func (t *tenantStreams) setLimit(n int) {
	t.mu.Lock()
	t.max = n
	t.mu.Unlock()
}

func (t *tenantStreams) limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max
}

// open counts one generation for tenant ("" counts against nobody).
func (t *tenantStreams) open(tenant string) (release func(), ok bool) {
	if tenant == "" {
		return func() {}, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.max > 0 && t.counts[tenant] >= t.max {
		return nil, false
	}
	if t.counts == nil {
		t.counts = map[string]int{}
	}
	t.counts[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.counts[tenant]--; t.counts[tenant] <= 0 {
				delete(t.counts, tenant)
			}
		})
	}, true
}

// run waits for the engine, generates, and reports the end to the stream.
// A model that must be loaded first is loaded outside the queue: the
// request leaves its place, loads, and queues again, so a long compile
// never holds the engine slot that other models' streams need.
func (r *Runner) run(s *Stream, ticket *Ticket) {
	defer r.inflight.Done()
	model, _ := r.localModel(s.req.Model) // checked by Start
	var loadTime time.Duration
	pinned := false
	if r.engine.Describe().LoadsModels && !r.life.isLoaded(model.ID) {
		ticket.abandon()
		var err error
		if loadTime, err = r.acquireShowingLoad(s, model); err != nil {
			s.finish(Result{}, err)
			return
		}
		pinned = true
		if ticket, err = r.sched.EnqueueConversation(s.req.Model, s.req.Messages); err != nil {
			r.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
			s.finish(Result{}, err)
			return
		}
	}
	if err := ticket.Wait(s.ctx, r.cfg.QueueTimeout); err != nil {
		if pinned {
			r.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
		}
		s.finish(Result{}, err)
		return
	}
	if !pinned {
		// Loaded a moment ago; acquire only pins it (or, if it was
		// evicted meanwhile, loads it again).
		var err error
		if loadTime, err = r.acquireShowingLoad(s, model); err != nil {
			ticket.Release()
			s.finish(Result{}, err)
			return
		}
	}
	s.begin(r.DeviceOf(model.ID))
	res, err := r.generateResident(s, model, &loadTime)
	r.life.release(model.ID, s.req.KeepAlive, s.req.MayUnpin)
	ticket.Release()
	res.Timings.Load = loadTime
	if err == nil {
		r.cfg.Observer.Prefill(model.ID, ticket.CacheHint, max(res.PromptTokens-res.CachedPromptTokens, 0), res.CachedPromptTokens)
	}
	s.finish(res, err)
}

// acquireShowingLoad acquires model for s; while it loads, s's heartbeats
// say how the load goes.
func (r *Runner) acquireShowingLoad(s *Stream, model ModelInfo) (time.Duration, error) {
	s.watchLoad(func() (LoadStatus, bool) { return r.life.loadStatus(model.ID) })
	defer s.watchLoad(nil)
	return r.life.acquire(s.ctx, model)
}

// Loading lists the models being loaded now (not yet in Loaded).
func (r *Runner) Loading() []LoadStatus { return r.life.loads() }

// CompileState says how loading model would go: a first compile, a cached
// blob, or not known.
func (r *Runner) CompileState(id string) CompileState {
	if o := r.owner(id); o != r {
		return o.CompileState(id)
	}
	m, err := r.localModel(id)
	if err != nil || r.cfg.CompileCache == nil {
		return CompileUnknown
	}
	if !r.engine.Describe().LoadsModels {
		return CompileUnknown
	}
	return r.cfg.CompileCache.State(m.ID)
}

// LoadModel loads model and starts its keep-alive: nil means the default, negative forever, zero
// unloads it at once. It returns how long loading took.
func (r *Runner) LoadModel(ctx context.Context, id string, keepAlive *time.Duration) (time.Duration, error) {
	if r.closing.Load() {
		return 0, ErrShuttingDown
	}
	if o := r.owner(id); o != r {
		return o.LoadModel(ctx, id, keepAlive)
	}
	m, err := r.localModel(id)
	if err != nil {
		return 0, err
	}
	// No engine slot: loading one model does not stop others' streams.
	took, err := r.life.acquire(ctx, m)
	if err == nil {
		r.life.release(m.ID, keepAlive, false)
	}
	return took, err
}

// Preload loads model and keeps it loaded whatever requests' keep_alive
// says (--preload): only UnloadModel, or a keep_alive of 0 from a request
// that MayUnpin, unloads it. It returns how long loading took.
func (r *Runner) Preload(ctx context.Context, id string) (time.Duration, error) {
	if o := r.owner(id); o != r {
		return o.Preload(ctx, id)
	}
	m, err := r.localModel(id)
	if err != nil {
		return 0, err
	}
	took, err := r.life.acquire(ctx, m)
	if err != nil {
		return 0, err
	}
	r.life.markPreloaded(m.ID)
	r.life.release(m.ID, nil, false)
	return took, nil
}

// Preloaded reports whether model is loaded and pinned by Preload.
func (r *Runner) Preloaded(id string) bool {
	if m, err := r.Model(id); err == nil {
		id = m.ID // an alias names the same pin
	}
	return r.life.preloaded(id)
}

// ReloadModel replaces model with a fresh instance from its files once the
// streams ahead of it have finished: it waits for the engine slot like any
// request (ctx bounds that drain), so nothing is cut off, and requests that
// come later wait for the new instance. On failure the old one keeps
// serving. It returns how long the reload took.
func (r *Runner) ReloadModel(ctx context.Context, id string) (time.Duration, error) {
	var took time.Duration
	err := r.withSlot(ctx, id, func(m ModelInfo) error {
		start := time.Now()
		err := r.reloadResident(ctx, m)
		took = time.Since(start)
		if err == nil {
			r.sched.Forget(m.ID) // the new pipeline's cache starts empty
		}
		return err
	})
	return took, err
}

// UnloadModel unloads model once the engine is free.
func (r *Runner) UnloadModel(ctx context.Context, id string) error {
	return r.withSlot(ctx, id, func(m ModelInfo) error {
		r.life.unload(m.ID)
		return nil
	})
}

// withSlot runs fn while holding the engine's slot, so loads and unloads
// never overlap a generation.
func (r *Runner) withSlot(ctx context.Context, id string, fn func(ModelInfo) error) error {
	if r.closing.Load() {
		return ErrShuttingDown
	}
	if o := r.owner(id); o != r {
		return o.withSlot(ctx, id, fn)
	}
	m, err := r.localModel(id)
	if err != nil {
		return err
	}
	ticket, err := r.sched.Enqueue()
	if err != nil {
		return err
	}
	if err := ticket.Wait(ctx, r.cfg.QueueTimeout); err != nil {
		return err
	}
	defer ticket.Release()
	return fn(m)
}

// EngineName names the engine serving the models.
func (r *Runner) EngineName() string { return r.engine.Name() }

// Simulated reports whether the engine makes up its text.
func (r *Runner) Simulated() bool { return r.engine.Simulated() }

// Placement is the device a loaded model runs on, for engines that place
// models on devices; "" otherwise.
func (r *Runner) Placement(model string) string {
	if o := r.owner(model); o != r {
		return o.Placement(model)
	}
	return r.engine.DeviceOf(model)
}

// DeviceOf names the device model runs on: the engine's answer, or
// "simulated" for the simulated engine.
func (r *Runner) DeviceOf(model string) string {
	if o := r.owner(model); o != r {
		return o.DeviceOf(model)
	}
	if d := r.engine.DeviceOf(model); d != "" {
		return d
	}
	if r.engine.Simulated() {
		return "simulated"
	}
	return ""
}

// Restarts is how many times a fault restarted model's worker (0 for an
// engine in the daemon's process).
func (r *Runner) Restarts(model string) int {
	return r.engine.ModelRestarts(model)
}

// Loaded lists the models in memory.
func (r *Runner) Loaded() []LoadedModel { return r.life.list() }

// generate calls the engine, turning a panic into an error so one bad
// request cannot take the daemon down.
func (r *Runner) generate(s *Stream) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("engine panicked", "engine", r.engine.Name(), "panic", p)
			err = &EngineError{Engine: r.engine.Name(), Cause: fmt.Errorf("%w: %v", ErrPanic, p)}
		}
	}()
	return r.engine.Generate(s.ctx, s.req, s.sink)
}

// Waiting is the number of requests queued for the engine.
func (r *Runner) Waiting() int { return r.sched.Waiting() }

// Running is the number of generations the engine is running.
func (r *Runner) Running() int { return r.sched.Running() }

// RetryAfter estimates how long a refused client should wait.
func (r *Runner) RetryAfter() time.Duration { return r.sched.RetryAfter() }

// StopAccepting makes Start refuse new requests with ErrShuttingDown.
func (r *Runner) StopAccepting() {
	r.closing.Store(true)
	r.eachUpstream((*Runner).StopAccepting)
}

// Abort ends every stream with ErrShuttingDown; engines see Cancel at their
// next callback.
func (r *Runner) Abort() {
	r.abort(ErrShuttingDown)
	r.eachUpstream((*Runner).Abort)
}

// Wait blocks until every engine call has returned, or ctx ends; then it
// stops the keep-alive timers.
func (r *Runner) Wait(ctx context.Context) error {
	defer r.life.close()
	done := make(chan struct{})
	go func() {
		r.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return r.waitUpstreams(ctx)
	case <-ctx.Done():
		return fmt.Errorf("waiting for engine calls to return: %w", context.Cause(ctx))
	}
}
