package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
)

// Catalog is what the daemon knows of the models without running native
// code: the models folder (openvino) or the simulated model.
type Catalog interface {
	Models() []npu.ModelInfo
}

// Observer hears of the workers' faults, for metrics and logs.
type Observer interface {
	WorkerRestarted(model, reason string)
	DeviceHealth(device string, healthy bool)
}

// Config sets up the daemon side of the worker processes.
type Config struct {
	Name      string // the engine the workers run: "openvino", "sim"
	Simulated bool
	Catalog   Catalog
	// Command returns the command that starts one worker process (npud
	// worker, with the engine's configuration in its environment).
	Command func() *exec.Cmd
	// Device is the configured device: AUTO (or "") may move a model to
	// the next device when one is unhealthy; a named one never moves.
	Device string
	// PrefillTimeout: no first token within it and the worker is hung.
	// TokenTimeout: no callback for this long after the first token and
	// the worker is hung. 0 disables either.
	PrefillTimeout time.Duration
	TokenTimeout   time.Duration
	// RestartBackoff is the wait before loading a model again after a
	// fault took its worker, doubled after each further fault up to
	// MaxBackoff, and reset by a generation that ends well.
	RestartBackoff time.Duration
	MaxBackoff     time.Duration
	Health         HealthConfig
	Crashes        CrashConfig
	Observer       Observer
	Log            *slog.Logger
}

// Engine is an npu.Engine whose models run in worker processes, one per
// loaded model: a fault takes down that model's streams only. It holds no
// residency of its own: a fault forgets the worker and the model and says
// so (npu.ErrModelLost), and the pool's lifecycle loads the model again
// for the next request, which starts a new worker.
type Engine struct {
	cfg      Config
	health   *health
	crashes  *crashMemory
	devices  map[string]string // what a probe worker saw at the start
	features npu.Features      // what the probe worker's engine can do
	jobIDs   atomic.Int64

	mu       sync.Mutex
	procs    map[string]*proc // by model: the worker running it
	loadedIn map[string]*proc // by model: the worker whose load of it finished
	restarts map[string]int   // by model: faults since its last good generation (the backoff)
	byModel  map[string]int   // by model: every restart, for /api/ps
	total    atomic.Int64     // restarts, for /health
}

var _ npu.Engine = (*Engine)(nil)

// New starts a probe worker to list the devices (which also shows the
// engine starts at all), and returns the engine.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.RestartBackoff {
		cfg.MaxBackoff = 30 * time.Second
	}
	e := &Engine{cfg: cfg, health: newHealth(cfg.Health, cfg.Observer, cfg.Log), crashes: newCrashMemory(cfg.Crashes, time.Now),
		devices: map[string]string{},
		procs:   map[string]*proc{}, loadedIn: map[string]*proc{}, restarts: map[string]int{}, byModel: map[string]int{}}
	probe, err := e.spawn("")
	if err != nil {
		return nil, err
	}
	done, err := probe.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobDevices})
	probe.stop()
	if err != nil {
		return nil, fmt.Errorf("starting an engine worker: %w", err)
	}
	for _, d := range done.Devices {
		e.devices[d.Name] = d.FullName
		e.health.track(d.Name)
	}
	e.features = done.Features
	return e, nil
}

func (e *Engine) Name() string            { return e.cfg.Name }
func (e *Engine) Simulated() bool         { return e.cfg.Simulated }
func (e *Engine) Models() []npu.ModelInfo { return e.cfg.Catalog.Models() }

// Describe implements npu.Engine: models are loaded by starting their
// workers, whatever the engine in them; the rest is what the probe
// worker's engine said it can do. Counting every request's prompt before
// it queues would be a round trip per request, so PromptTokens does not
// (CountPrompt, which a client asks for, does: count.go).
func (e *Engine) Describe() npu.Features {
	return npu.Features{LoadsModels: true, Reloads: e.features.Reloads, Embeds: e.features.Embeds, Reranks: e.features.Reranks, Transcribes: e.features.Transcribes,
		ExactCounts: e.features.ExactCounts}
}

// PromptTokens implements npu.Engine: not counted (see Describe).
func (*Engine) PromptTokens(*npu.Request) (int, bool) { return 0, false }
func (e *Engine) DeviceNames() map[string]string {
	out := make(map[string]string, len(e.devices))
	for k, v := range e.devices {
		out[k] = v
	}
	return out
}

// Restarts is how many times a worker was restarted after a fault.
func (e *Engine) Restarts() int64 { return e.total.Load() }

// ModelRestarts is how many times faults ended model's worker.
func (e *Engine) ModelRestarts(model string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byModel[model]
}

// SetObserver starts reporting to obs (the daemon's metrics, made after
// the engine), with each device's health as it is now.
func (e *Engine) SetObserver(obs Observer) {
	e.mu.Lock()
	e.cfg.Observer = obs
	e.mu.Unlock()
	e.health.observe(obs)
}

// DeviceHealth reports each device's health.
func (e *Engine) DeviceHealth() map[string]bool { return e.health.snapshot() }

// DeviceOf implements npu.Engine.
func (e *Engine) DeviceOf(model string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.procs[model]; p != nil {
		return p.device
	}
	return ""
}

// Load implements npu.Engine: a worker for the model, the model
// compiled in it. A load after faults waits the restart backoff first.
// Under AUTO a worker that dies while compiling is charged to the device
// it was compiling for, and the next device is tried.
func (e *Engine) Load(ctx context.Context, model string) error {
	if err := e.backoff(ctx, model); err != nil {
		return err
	}
	var crashedOn []string // devices whose compile of this model killed a worker
	for {
		if err := e.health.allow(e.cfg.Device); err != nil {
			return err
		}
		p, err := e.worker(model)
		if err != nil {
			return err
		}
		done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobLoad, Model: model, Avoid: e.avoid()})
		var fault *FaultError
		if errors.As(err, &fault) {
			device := p.compilingOn()
			e.forget(model, p, true)
			e.health.failed(device, "", fmt.Sprintf("compiling %q: %s", model, fault.Cause))
			if e.auto() && device != "" && !slices.Contains(crashedOn, device) && len(crashedOn) < len(e.devices) {
				crashedOn = append(crashedOn, device)
				if len(crashedOn) < len(e.devices) {
					e.cfg.Log.Warn("a worker died compiling a model; trying the next device", "model", model,
						"device", device, "cause", fault.Cause)
					continue
				}
			}
			if !slices.Contains(crashedOn, device) {
				crashedOn = append(crashedOn, orUnknown(device))
			}
			return fmt.Errorf("loading model %q: the worker died while compiling it on %s (%s): %w",
				model, strings.Join(crashedOn, " and "), fault.Cause, npu.ErrEngineCrashed)
		}
		if err != nil {
			e.forget(model, p, true)
			return err
		}
		e.mu.Lock()
		p.device = done.Device
		e.loadedIn[model] = p
		e.mu.Unlock()
		e.health.recovered(done.Device) // a probe that worked
		return nil
	}
}

// Reload implements npu.Engine. A worker that dies recompiling the model
// is a fault like a compile's: the model is lost.
func (e *Engine) Reload(ctx context.Context, model string) error {
	if !e.features.Reloads {
		return fmt.Errorf("engine %s cannot reload a model: %w", e.cfg.Name, npu.ErrNotSupported)
	}
	p, err := e.running(model)
	if err != nil {
		return err
	}
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobReload, Model: model})
	var fault *FaultError
	if errors.As(err, &fault) {
		return e.jobFault(model, p, fault)
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	p.device = done.Device
	e.mu.Unlock()
	return nil
}

// Unload implements npu.Engine: the model's worker unloads it and
// exits.
func (e *Engine) Unload(model string) error {
	e.mu.Lock()
	p := e.procs[model]
	delete(e.procs, model)
	delete(e.loadedIn, model)
	e.mu.Unlock()
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobUnload, Model: model})
	p.stop()
	var fault *FaultError
	if errors.As(err, &fault) {
		return nil // it is gone either way
	}
	return err
}

// Generate implements npu.Engine: the generation runs in the model's
// worker; a watchdog kills a worker that stops calling back. A fault ends
// the generation with an error that also wraps npu.ErrModelLost: the
// model went with its worker. A request that crashed a worker twice, and
// a tenant whose requests keep crashing workers, are refused first.
func (e *Engine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	fp := fingerprint(req)
	if err := e.crashes.check(fp, req.Tenant); err != nil {
		return npu.Result{}, err
	}
	p, err := e.running(req.Model)
	if err != nil {
		return npu.Result{}, err
	}
	device := e.DeviceOf(req.Model)
	encoded, err := json.Marshal(req)
	if err != nil {
		return npu.Result{}, err
	}
	c := p.begin(Job{ID: e.jobIDs.Add(1), Kind: jobGenerate, Model: req.Model, Request: encoded}, sink)
	defer p.end(c)
	tick := time.NewTicker(watchInterval(e.cfg.PrefillTimeout, e.cfg.TokenTimeout))
	defer tick.Stop()
	for {
		select {
		case d := <-c.done:
			if d.Err == nil {
				e.mu.Lock()
				e.restarts[req.Model] = 0
				e.mu.Unlock()
			}
			return d.Result, d.Err.errorOf()
		case <-p.exited:
			if c.unsent() {
				return npu.Result{}, e.diedIdle(req.Model, p)
			}
			fault := &FaultError{Model: req.Model, Device: device, Cause: p.exitCause(), Kind: npu.ErrEngineCrashed}
			return npu.Result{}, modelLost(e.requestFault(req, fp, p, fault))
		case now := <-tick.C:
			if why := c.hung(now, e.cfg.PrefillTimeout, e.cfg.TokenTimeout); why != "" {
				p.kill()
				<-p.exited
				fault := &FaultError{Model: req.Model, Device: device, Cause: why, Kind: npu.ErrEngineHung}
				return npu.Result{}, modelLost(e.requestFault(req, fp, p, fault))
			}
		}
	}
}

// Embed runs an embedding in the model's worker. A worker that dies
// during it is a fault like a generation's, and the model is lost.
func (e *Engine) Embed(ctx context.Context, model string, inputs []string, truncate bool) (npu.Embedded, error) {
	if !e.features.Embeds {
		return npu.Embedded{}, fmt.Errorf("engine %s does not embed: %w", e.cfg.Name, npu.ErrNotSupported)
	}
	p, err := e.running(model)
	if err != nil {
		return npu.Embedded{}, err
	}
	device := e.DeviceOf(model)
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobEmbed, Model: model, Inputs: inputs, Truncate: truncate})
	var fault *FaultError
	if errors.As(err, &fault) {
		fault.Device = device
		return npu.Embedded{}, e.jobFault(model, p, fault)
	}
	if err != nil {
		return npu.Embedded{}, err
	}
	return npu.Embedded{Vectors: done.Vectors, PromptTokens: done.Tokens, Truncated: done.Truncated}, nil
}

// Rerank implements npu.Reranker: a rerank in the model's worker. A
// worker that dies during it is a fault like an embedding's.
func (e *Engine) Rerank(ctx context.Context, model, query string, documents []string, truncate bool) (npu.Reranked, error) {
	if !e.features.Reranks {
		return npu.Reranked{}, fmt.Errorf("engine %s does not rerank: %w", e.cfg.Name, npu.ErrNotSupported)
	}
	if len(documents) > npu.MaxRerankDocuments {
		return npu.Reranked{}, fmt.Errorf("%d documents, more than %d: %w", len(documents), npu.MaxRerankDocuments, npu.ErrInvalidRequest)
	}
	p, err := e.running(model)
	if err != nil {
		return npu.Reranked{}, err
	}
	device := e.DeviceOf(model)
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobRerank, Model: model, Query: query, Inputs: documents, Truncate: truncate})
	var fault *FaultError
	if errors.As(err, &fault) {
		fault.Device = device
		return npu.Reranked{}, e.jobFault(model, p, fault)
	}
	if err != nil {
		return npu.Reranked{}, err
	}
	if len(done.Ranked) != len(documents) {
		return npu.Reranked{}, fmt.Errorf("the worker ranked %d of %d documents", len(done.Ranked), len(documents))
	}
	if done.Truncated < 0 || done.Truncated > len(documents) {
		return npu.Reranked{}, fmt.Errorf("the worker truncated %d of %d documents", done.Truncated, len(documents))
	}
	return npu.Reranked{Results: done.Ranked, PromptTokens: done.Tokens, Truncated: done.Truncated}, nil
}

// Transcribe runs a transcription in the model's worker. A worker that
// dies during it is a fault like a generation's: the transcription ends
// with engine_crashed, the device is charged, the model is lost and the
// next request loads it again in a new worker. There is no watchdog:
// GenAI's Whisper pipeline calls nothing back while it decodes (its C API
// has no streamer: openvino.genai src/c/include/openvino/genai/c/whisper_pipeline.h).
func (e *Engine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	if !e.features.Transcribes {
		return npu.Transcript{}, fmt.Errorf("engine %s does not transcribe audio: %w", e.cfg.Name, npu.ErrNotSupported)
	}
	p, err := e.running(req.Model)
	if err != nil {
		return npu.Transcript{}, err
	}
	device := e.DeviceOf(req.Model)
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobTranscribe, Model: req.Model, Audio: req})
	var fault *FaultError
	if errors.As(err, &fault) {
		fault.Device = device
		return npu.Transcript{}, e.jobFault(req.Model, p, fault)
	}
	if err != nil {
		return npu.Transcript{}, err
	}
	e.mu.Lock()
	e.restarts[req.Model] = 0
	e.mu.Unlock()
	return done.Transcript, nil
}

// Close stops every worker.
func (e *Engine) Close() {
	e.mu.Lock()
	procs := make([]*proc, 0, len(e.procs))
	for _, p := range e.procs {
		procs = append(procs, p)
	}
	e.procs = map[string]*proc{}
	e.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
}

// jobFault ends a job (no generation) whose worker died: a fault during
// it, or, when the job never reached the worker, a worker that had died
// idle.
func (e *Engine) jobFault(model string, p *proc, fault *FaultError) error {
	if fault.unsent {
		return e.diedIdle(model, p)
	}
	e.fault(model, p, fault, "", true)
	return modelLost(fault)
}

// requestFault records a crash or hang during request fp's generation and
// says how it ends: a request that had crashed a worker before is told
// not to come back (ErrEngineCrashedOnRequest), and its repeat neither
// counts again against the device nor grows the restart backoff others
// wait.
func (e *Engine) requestFault(req *npu.Request, fp string, p *proc, fault *FaultError) error {
	repeat := e.crashes.crashed(fp, req.Tenant)
	e.fault(req.Model, p, fault, fp, !repeat)
	if repeat {
		e.cfg.Log.Warn("a request crashed an engine worker again; it is refused from now on",
			"model", req.Model, "tenant", req.Tenant, "request", fp)
		// The fault is kept as text, not wrapped: wrapped, the refusal would
		// also be an ErrEngineCrashed (retryable) and a FaultError, and its
		// class would hang on every classifier checking this one first.
		return fmt.Errorf("%v; the same request crashed it before, so it is refused for a while: %w", fault, npu.ErrEngineCrashedOnRequest) //nolint:errorlint // see above
	}
	return fault
}

// fault records a crash or hang: the worker and the model in it are
// forgotten (the next load starts a new one; grow: after a longer
// backoff), the device charged (key: the request that ran, "" for none),
// the restart counted.
func (e *Engine) fault(model string, p *proc, fault *FaultError, key string, grow bool) {
	e.forget(model, p, grow)
	e.health.failed(fault.Device, key, fault.Error())
	reason := "crashed"
	if errors.Is(fault, npu.ErrEngineHung) {
		reason = "hung"
	}
	e.restarted(model, reason)
	e.cfg.Log.Warn("engine worker "+reason+"; its streams end with an error and the next request loads the model again",
		"model", model, "device", fault.Device, "cause", fault.Cause)
}

// restarted counts a fault that took model's worker (its next load is the
// restart) and tells the observer why.
func (e *Engine) restarted(model, reason string) {
	e.total.Add(1)
	e.mu.Lock()
	e.byModel[model]++
	obs := e.cfg.Observer
	e.mu.Unlock()
	if obs != nil {
		obs.WorkerRestarted(model, reason)
	}
}

// forget drops p as model's worker, and the model loaded in it, if it
// still is; grow counts the fault in the model's restart backoff. It
// reports whether p was still model's worker.
func (e *Engine) forget(model string, p *proc, grow bool) bool {
	e.mu.Lock()
	current := e.procs[model] == p
	if current {
		delete(e.procs, model)
		if grow {
			e.restarts[model]++
		}
	}
	if e.loadedIn[model] == p {
		delete(e.loadedIn, model)
	}
	e.mu.Unlock()
	p.kill()
	return current
}

// running is the worker model is loaded in. It loads nothing itself (the
// pool's lifecycle owns what is loaded): when no worker holds the model
// (a fault took it, or its load has not finished) the error wraps
// npu.ErrModelLost and no other class, so the pool forgets the model,
// loads it again and runs the job once more. A worker found dead died
// idle (diedIdle).
func (e *Engine) running(model string) (*proc, error) {
	e.mu.Lock()
	p, loaded := e.procs[model], e.loadedIn[model]
	e.mu.Unlock()
	switch {
	case p == nil || loaded != p:
		return nil, fmt.Errorf("model %q is not loaded in a worker: %w", model, npu.ErrModelLost)
	case p.dead():
		return nil, e.diedIdle(model, p)
	}
	return p, nil
}

// diedIdle ends a job whose worker had died before the job reached it
// (killed, out of memory): found dead before the job, or its death seen
// only after the job was handed over, whose write failed (call.unsent).
// The worker is forgotten and counted as a crash; its device is not
// charged and the error wraps npu.ErrModelLost and no other class, since
// nothing ran: the pool loads the model again and runs the job once more.
func (e *Engine) diedIdle(model string, p *proc) error {
	cause := p.exitCause()
	if e.forget(model, p, true) {
		e.restarted(model, "crashed")
		e.cfg.Log.Warn("engine worker died while idle; the model is loaded again", "model", model, "cause", cause)
	}
	return fmt.Errorf("the worker running model %q died while idle (%s): %w", model, cause, npu.ErrModelLost)
}

// backoff waits before loading a model whose worker faulted:
// RestartBackoff, doubled per fault since its last good job, up to
// MaxBackoff. ctx bounds the wait.
func (e *Engine) backoff(ctx context.Context, model string) error {
	e.mu.Lock()
	faults := e.restarts[model]
	e.mu.Unlock()
	if faults == 0 {
		return nil
	}
	wait := time.NewTimer(min(e.cfg.RestartBackoff<<min(faults-1, 16), e.cfg.MaxBackoff))
	defer wait.Stop()
	select {
	case <-wait.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// worker is model's worker process, started when there is none.
func (e *Engine) worker(model string) (*proc, error) {
	e.mu.Lock()
	if p := e.procs[model]; p != nil && !p.dead() {
		e.mu.Unlock()
		return p, nil
	}
	e.mu.Unlock()
	p, err := e.spawn(model)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.procs[model]; old != nil && !old.dead() {
		go p.stop() // another caller started one first
		return old, nil
	}
	e.procs[model] = p
	return p, nil
}

func (e *Engine) auto() bool { return e.cfg.Device == "" || e.cfg.Device == "AUTO" }

// avoid is the devices a load under AUTO must not use.
func (e *Engine) avoid() []string {
	if !e.auto() {
		return nil
	}
	return e.health.unhealthyDevices()
}
