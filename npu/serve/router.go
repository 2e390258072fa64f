package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
)

// Upstream is a pool for another server's engine (npu/upstream), which the
// router hands requests to: for models only it serves, and for overflow
// when the local queue is deep.
type Upstream struct {
	Name string
	Pool *Pool
	// Healthy reports whether the upstream is in rotation; nil: always.
	Healthy func() bool
}

// InRotation reports whether requests may go to the upstream.
func (u *Upstream) InRotation() bool { return u.Healthy == nil || u.Healthy() }

// RouterConfig says where work may go besides the local pool, and how
// much of it one tenant may have at once.
type RouterConfig struct {
	// Aliases maps extra names to the local engine's models ("llama" →
	// "Llama-3.2-1B-int4-ov").
	Aliases   map[string]string
	Upstreams []Upstream
	// OverflowAfter: a request for a local model goes to an upstream
	// serving the same model (by name or alias) when its wait for the
	// local engine is estimated over this bound, or the local queue is
	// full; never otherwise. 0 = no overflow.
	OverflowAfter time.Duration
	// Limits are what one tenant may do; SetLimits changes them.
	Limits Limits
	// Observer hears the requests and work refused for their tenant;
	// nil = none.
	Observer npu.Observer
}

// Router is the one way into the engines and the one admission point: it
// takes each request from its tenant's rate (AdmitRequest), resolves the
// model a request names once (alias, local engine, upstream), admits the
// work against its tenant's stream cap whichever engine will run it, and
// hands it to the pool that serves the model. Every kind of work
// (generations, embeddings, transcriptions) is admitted here; the pools
// know no tenants.
type Router struct {
	local     *Pool
	upstreams []Upstream
	aliases   map[string]string
	overflow  time.Duration
	observer  npu.Observer
	log       *slog.Logger
	closing   atomic.Bool
	// The admission's counts, per tenant (admission.go).
	rates   tenantRates
	tenants tenantStreams
}

// NewRouter returns the router in front of local and cfg's upstreams.
func NewRouter(local *Pool, cfg RouterConfig, log *slog.Logger) *Router {
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	r := &Router{local: local, upstreams: cfg.Upstreams, aliases: cfg.Aliases, overflow: cfg.OverflowAfter,
		observer: cfg.Observer, log: log}
	r.SetLimits(cfg.Limits)
	return r
}

// NewEngineRouter is a router in front of engine alone: no aliases, no
// upstreams, no stream cap (the simplest way to serve one engine, as tests
// and tools do).
func NewEngineRouter(engine npu.Engine, cfg PoolConfig, log *slog.Logger) *Router {
	return NewRouter(NewPool(engine, cfg, log), RouterConfig{Observer: cfg.Observer}, log)
}

// Engine is the local engine.
func (r *Router) Engine() npu.Engine { return r.local.engine }

// Upstreams are the pools requests may be handed to.
func (r *Router) Upstreams() []Upstream { return r.upstreams }

// resolved is a model and the pool that serves it.
type resolved struct {
	pool     *Pool
	model    npu.ModelInfo
	upstream *Upstream // nil for the local pool
}

// resolve finds the model id names: an alias or a model of the local
// engine first, then an upstream's (healthy or not). The error wraps
// ErrModelNotFound, or ErrNotSupported for a model pulled into the models
// folder that no engine serves (it says why).
func (r *Router) resolve(id string) (resolved, error) {
	if m, ok := r.findLocal(id); ok {
		return resolved{pool: r.local, model: m}, nil
	}
	for i := range r.upstreams {
		up := &r.upstreams[i]
		if m, ok := up.Pool.find(id); ok {
			return resolved{pool: up.Pool, model: m, upstream: up}, nil
		}
	}
	if _, why := r.unservedRegistry(id); why != "" {
		return resolved{}, fmt.Errorf("model %q is in the models folder, but it cannot be served: %s; `npud doctor` says how to fix it: %w", id, why, npu.ErrNotSupported)
	}
	return resolved{}, fmt.Errorf("model %q: %w", id, npu.ErrModelNotFound)
}

// findLocal looks id up among the local engine's models, by name or alias.
func (r *Router) findLocal(id string) (npu.ModelInfo, bool) {
	if target, ok := r.aliases[id]; ok {
		id = target
	}
	return r.local.find(id)
}

// poolOf is the pool serving id; the local one when nobody serves it, for
// questions about a model that went (its device, its restarts).
func (r *Router) poolOf(id string) (*Pool, string) {
	if res, err := r.resolve(id); err == nil {
		return res.pool, res.model.ID
	}
	return r.local, id
}

// Model looks a model up by id or alias and returns the model the engine
// serves; the error wraps ErrModelNotFound.
func (r *Router) Model(id string) (npu.ModelInfo, error) {
	res, err := r.resolve(id)
	return res.model, err
}

// Models lists the models served: the local engine's, in its order, then
// the aliases whose model it serves, by name, then what only upstreams
// serve.
func (r *Router) Models() []npu.ModelInfo {
	out := append([]npu.ModelInfo(nil), r.local.engine.Models()...)
	names := make([]string, 0, len(r.aliases))
	for alias := range r.aliases {
		names = append(names, alias)
	}
	sort.Strings(names)
	for _, alias := range names {
		if m, ok := r.findLocal(alias); ok {
			m.ID = alias
			out = append(out, m)
		}
	}
	for _, up := range r.upstreams {
		for _, m := range up.Pool.engine.Models() {
			if _, ok := r.findLocal(m.ID); !ok && !containsModel(out, m.ID) {
				out = append(out, m)
			}
		}
	}
	return out
}

func containsModel(models []npu.ModelInfo, id string) bool {
	for _, m := range models {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Start admits req and returns its stream at once; the stream's first events
// may be heartbeats while the request waits its turn. Errors: the model is
// unknown (ErrModelNotFound), the tenant is at its stream cap
// (ErrTooManyStreams), the queue is full (ErrQueueFull), the request asks
// what the model cannot do or a format npud cannot hold an answer to
// (InvalidRequestError), or the router is
// draining (ErrShuttingDown). The caller must Close the stream.
func (r *Router) Start(req *npu.Request) (npu.Stream, error) {
	if r.closing.Load() {
		return nil, npu.ErrShuttingDown
	}
	res, err := r.route(req.Model)
	if err != nil {
		return nil, err
	}
	req.Model = res.model.ID // an alias names the model the engine knows
	if err := fitRequest(req, res.model); err != nil {
		return nil, err
	}
	format, err := compileFormat(req.Format)
	if err != nil {
		return nil, err
	}
	req.Normalize()
	release, err := r.admit(req.Tenant)
	if err != nil {
		return nil, err
	}
	s, err := res.pool.start(req, res.model, format, release)
	if err != nil {
		return nil, err // not a nil *Stream in the interface
	}
	return s, nil
}

// route picks the pool for a generation of model: the one serving it, or
// an upstream serving it too when the local engine is too busy.
func (r *Router) route(model string) (resolved, error) {
	res, err := r.resolve(model)
	switch {
	case err != nil:
		return res, err
	case res.upstream != nil:
		if !res.upstream.InRotation() {
			// Another upstream may serve it and be in rotation.
			if up, m, ok := r.upstreamFor(model); ok {
				return resolved{pool: up.Pool, model: m, upstream: up}, nil
			}
			return resolved{}, fmt.Errorf("model %q is served by an upstream that is out of rotation: %w", model, npu.ErrUpstreamUnavailable)
		}
		return res, nil
	case r.overflow <= 0 || !r.local.overloaded(r.overflow):
		return res, nil
	}
	if up, m, ok := r.upstreamFor(append([]string{model}, r.namesOf(res.model.ID)...)...); ok {
		r.log.Debug("request overflowed to an upstream", "model", res.model.ID, "upstream", up.Name,
			"estimated_wait", r.local.sched.EstimatedWait())
		return resolved{pool: up.Pool, model: m, upstream: up}, nil
	}
	return res, nil
}

// upstreamFor is the first upstream in rotation serving one of names, and
// its model.
func (r *Router) upstreamFor(names ...string) (*Upstream, npu.ModelInfo, bool) {
	for i := range r.upstreams {
		up := &r.upstreams[i]
		if !up.InRotation() {
			continue
		}
		for _, name := range names {
			if m, ok := up.Pool.find(name); ok {
				return up, m, true
			}
		}
	}
	return nil, npu.ModelInfo{}, false
}

// namesOf are the names model is known by here: its own and its aliases.
func (r *Router) namesOf(model string) []string {
	names := []string{model}
	for alias, target := range r.aliases {
		if target == model {
			names = append(names, alias)
		}
	}
	return names
}

// fitRequest checks that model m can do what req asks (text, thinking,
// tools, images), and narrows the tools the model sees to what the tool
// choice allows.
func fitRequest(req *npu.Request, m npu.ModelInfo) error {
	if err := npu.CheckGenerates(m); err != nil {
		return err
	}
	if req.Think != nil && *req.Think && !m.Details.Thinking {
		return &npu.InvalidRequestError{Param: "think", Message: fmt.Sprintf(
			"model %q does not support thinking: its chat template takes no enable_thinking and opens no <think>", m.ID)}
	}
	return fitTools(req, m)
}

// fitTools checks that model m can do what req asks of tools and images,
// and narrows the tools the model sees to what the tool choice allows.
func fitTools(req *npu.Request, m npu.ModelInfo) error {
	if req.ToolChoice.Mode == npu.ToolChoiceNone {
		req.Tools = nil // the model is not told of them, so it calls none
	}
	if len(req.Tools) > 0 && m.Details.ToolFormat == "" {
		return &npu.InvalidRequestError{Param: "tools", Message: fmt.Sprintf(
			"model %q does not support tools: its chat template renders no tool definitions", m.ID)}
	}
	if req.ToolChoice.Mode == npu.ToolChoiceFunction {
		// The model sees only the function it must call.
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Name {
				req.Tools = []npu.Tool{t}
				break
			}
		}
	}
	for _, msg := range req.Messages {
		if len(msg.Images) > 0 {
			return npu.CheckVision(m)
		}
	}
	return nil
}

// Loading lists the local models being loaded now (not yet in Loaded).
func (r *Router) Loading() []npu.LoadStatus { return r.local.life.loads() }

// Loaded lists the local models in memory.
func (r *Router) Loaded() []npu.LoadedModel { return r.local.life.list() }

// CompileState says how loading model would go: a first compile, a cached
// blob, or not known.
func (r *Router) CompileState(id string) npu.CompileState {
	res, err := r.resolve(id)
	if err != nil {
		return npu.CompileUnknown
	}
	return res.pool.compileState(res.model)
}

// LoadModel loads model and starts its keep-alive: nil means the default,
// negative forever, zero unloads it at once. It returns how long loading
// took.
func (r *Router) LoadModel(ctx context.Context, id string, keepAlive *time.Duration) (time.Duration, error) {
	if r.closing.Load() {
		return 0, npu.ErrShuttingDown
	}
	res, err := r.resolve(id)
	if err != nil {
		return 0, err
	}
	return res.pool.load(ctx, res.model, keepAlive)
}

// Preload loads model and keeps it loaded whatever requests' keep_alive
// says (--preload): only UnloadModel, or a keep_alive of 0 from a request
// that MayUnpin, unloads it. It returns how long loading took.
func (r *Router) Preload(ctx context.Context, id string) (time.Duration, error) {
	res, err := r.resolve(id)
	if err != nil {
		return 0, err
	}
	return res.pool.preload(ctx, res.model)
}

// Preloaded reports whether model is loaded and pinned by Preload.
func (r *Router) Preloaded(id string) bool {
	pool, model := r.poolOf(id)
	return pool.life.preloaded(model)
}

// ReloadModel replaces model with a fresh instance from its files once the
// streams ahead of it have finished: it waits for the engine slot like any
// request (ctx bounds that drain), so nothing is cut off, and requests that
// come later wait for the new instance. On failure the old one keeps
// serving. It returns how long the reload took.
func (r *Router) ReloadModel(ctx context.Context, id string) (time.Duration, error) {
	if r.closing.Load() {
		return 0, npu.ErrShuttingDown
	}
	res, err := r.resolve(id)
	if err != nil {
		return 0, err
	}
	return res.pool.reload(ctx, res.model)
}

// UnloadModel unloads model once its engine is free.
func (r *Router) UnloadModel(ctx context.Context, id string) error {
	if r.closing.Load() {
		return npu.ErrShuttingDown
	}
	res, err := r.resolve(id)
	if err != nil {
		return err
	}
	return res.pool.unload(ctx, res.model)
}

// EngineName names the local engine.
func (r *Router) EngineName() string { return r.local.engine.Name() }

// Simulated reports whether the local engine makes up its text.
func (r *Router) Simulated() bool { return r.local.engine.Simulated() }

// Placement is the device a loaded model runs on, for engines that place
// models on devices; "" otherwise.
func (r *Router) Placement(model string) string {
	pool, id := r.poolOf(model)
	return pool.engine.DeviceOf(id)
}

// DeviceOf names the device model runs on: the engine's answer, or
// "simulated" for the simulated engine.
func (r *Router) DeviceOf(model string) string {
	pool, id := r.poolOf(model)
	return pool.deviceOf(id)
}

// Restarts is how many times a fault restarted model's worker (0 for an
// engine in the daemon's process).
func (r *Router) Restarts(model string) int {
	pool, id := r.poolOf(model)
	return pool.engine.ModelRestarts(id)
}

// Waiting is the number of requests queued for the local engine.
func (r *Router) Waiting() int { return r.local.Waiting() }

// Running is the number of generations the local engine is running.
func (r *Router) Running() int { return r.local.Running() }

// RetryAfter estimates how long a refused client should wait.
func (r *Router) RetryAfter() time.Duration { return r.local.sched.RetryAfter() }

// pools are the local pool and the upstreams', for the drain.
func (r *Router) pools() []*Pool {
	out := []*Pool{r.local}
	for _, up := range r.upstreams {
		out = append(out, up.Pool)
	}
	return out
}

// StopAccepting makes every pool refuse new work with ErrShuttingDown.
func (r *Router) StopAccepting() {
	r.closing.Store(true)
	for _, p := range r.pools() {
		p.stopAccepting()
	}
}

// Abort ends every stream with ErrShuttingDown; engines see Cancel at their
// next callback.
func (r *Router) Abort() {
	for _, p := range r.pools() {
		p.abort()
	}
}

// Wait blocks until every engine call of every pool has returned, or ctx
// ends; then it stops the keep-alive timers.
func (r *Router) Wait(ctx context.Context) error {
	var errs []error
	for _, p := range r.pools() {
		errs = append(errs, p.wait(ctx))
	}
	return errors.Join(errs...)
}
