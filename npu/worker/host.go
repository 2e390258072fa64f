package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
// worker's engine said it can do. Counting a prompt would be a round trip
// per request, so the workers do not.
func (e *Engine) Describe() npu.Features {
	return npu.Features{LoadsModels: true, Reloads: e.features.Reloads, Embeds: e.features.Embeds, Transcribes: e.features.Transcribes}
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
		e.fault(model, p, fault, "", true)
		return modelLost(fault)
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
func (e *Engine) Embed(ctx context.Context, model string, inputs []string) ([][]float32, int, error) {
	if !e.features.Embeds {
		return nil, 0, fmt.Errorf("engine %s does not embed: %w", e.cfg.Name, npu.ErrNotSupported)
	}
	p, err := e.running(model)
	if err != nil {
		return nil, 0, err
	}
	device := e.DeviceOf(model)
	done, err := p.do(ctx, Job{ID: e.jobIDs.Add(1), Kind: jobEmbed, Model: model, Inputs: inputs})
	var fault *FaultError
	if errors.As(err, &fault) {
		fault.Device = device
		e.fault(model, p, fault, "", true)
		return nil, 0, modelLost(fault)
	}
	if err != nil {
		return nil, 0, err
	}
	return done.Vectors, done.Tokens, nil
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
		e.fault(req.Model, p, fault, "", true)
		return npu.Transcript{}, modelLost(fault)
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
// loads it again and runs the job once more. A worker found dead (it died
// idle: killed, out of memory) is forgotten and counted as a crash first;
// its device is not charged, since no work of its ran.
func (e *Engine) running(model string) (*proc, error) {
	e.mu.Lock()
	p, loaded := e.procs[model], e.loadedIn[model]
	e.mu.Unlock()
	switch {
	case p == nil || loaded != p:
		return nil, fmt.Errorf("model %q is not loaded in a worker: %w", model, npu.ErrModelLost)
	case p.dead():
		cause := p.exitCause()
		if e.forget(model, p, true) {
			e.restarted(model, "crashed")
			e.cfg.Log.Warn("engine worker died while idle; the model is loaded again", "model", model, "cause", cause)
		}
		return nil, fmt.Errorf("the worker running model %q died while idle (%s): %w", model, cause, npu.ErrModelLost)
	}
	return p, nil
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

// spawn starts a worker process and reads its frames.
func (e *Engine) spawn(model string) (*proc, error) {
	cmd := e.cfg.Command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of its own, not StdoutPipe: Wait would close that when the
	// process exits, and what the worker wrote last (the device it was
	// compiling for when it died, a job's outcome) could be lost.
	stdout, output, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = output
	keepWithParent(cmd)
	err = cmd.Start()
	_ = output.Close() // the worker has its copy
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("starting an engine worker: %w", err)
	}
	adopt(cmd)
	p := &proc{model: model, cmd: cmd, out: newFrameWriter(stdin, maxJobFrame), calls: map[int64]*call{},
		exited: make(chan struct{}), log: e.cfg.Log}
	read := make(chan struct{})
	go func() {
		defer close(read)
		p.read(newFrameReader(stdout, maxReportFrame))
	}()
	go func() {
		err := cmd.Wait()
		// Its frames are passed on before its exit is seen, unless a
		// process it started holds the pipe open.
		select {
		case <-read:
		case <-time.After(time.Second):
		}
		_ = stdout.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

func watchInterval(prefill, token time.Duration) time.Duration {
	d := 100 * time.Millisecond
	for _, t := range []time.Duration{prefill, token} {
		if t > 0 && t/10 < d {
			d = max(t/10, time.Millisecond)
		}
	}
	return d
}

// proc is one worker process.
type proc struct {
	model  string
	cmd    *exec.Cmd
	out    *frameWriter // to the worker's standard input
	exited chan struct{}
	once   sync.Once
	log    *slog.Logger

	mu        sync.Mutex
	calls     map[int64]*call
	exitErr   error
	broke     error  // the frame that broke the protocol, when one did
	device    string // where the model runs (under the engine's lock)
	compiling string // the device the worker last said it compiles for
}

// call is one job in a worker.
type call struct {
	job     Job
	done    chan Done
	sink    npu.Sink
	started time.Time
	first   atomic.Int64 // unix nanoseconds of the first callback, 0 before
	last    atomic.Int64 // of the latest callback

	// The worker's reader alone uses these.
	chunks      int64       // callbacks received
	stoppedAt   int64       // the callback the sink answered STOP or CANCEL, 0 before
	vectors     [][]float32 // an embedding's, as they come
	vectorBytes int
	finished    bool // its outcome came
}

func (p *proc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *proc) compilingOn() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.compiling
}

// exitCause says how the process ended: its exit status or signal, or
// the frame that broke the protocol (it was killed for it).
func (p *proc) exitCause() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broke != nil {
		return p.broke.Error()
	}
	if p.exitErr == nil {
		return "it exited"
	}
	return p.exitErr.Error() // "signal: segmentation fault", "exit status 134"
}

// begin hands the worker a job whose callbacks go to sink.
func (p *proc) begin(job Job, sink npu.Sink) *call {
	c := &call{job: job, done: make(chan Done, 1), sink: sink, started: time.Now()}
	p.mu.Lock()
	p.calls[job.ID] = c
	p.mu.Unlock()
	// Not on the caller's goroutine: a worker that stopped reading would
	// hold it before its watchdog starts.
	go p.send(job)
	return c
}

func (p *proc) end(c *call) {
	p.mu.Lock()
	delete(p.calls, c.job.ID)
	p.mu.Unlock()
}

// send writes a job to the worker. A job that cannot be sent ends the
// worker (its stream's gob state is unknown), and its calls with it; a
// write that fails is a worker that is gone.
func (p *proc) send(job Job) {
	err := p.out.message(frameJob, job)
	switch {
	case errors.Is(err, errUnsendable):
		p.abandon(fmt.Errorf("a %s job for it %w", job.Kind, err))
	case err != nil:
		p.kill()
	}
}

// do runs a job without callbacks and waits for it.
func (p *proc) do(ctx context.Context, job Job) (Done, error) {
	c := p.begin(job, nil)
	defer p.end(c)
	select {
	case d := <-c.done:
		return d, d.Err.errorOf()
	case <-p.exited:
		return Done{}, &FaultError{Model: job.Model, Device: p.compilingOn(), Cause: p.exitCause(), Kind: npu.ErrEngineCrashed}
	case <-ctx.Done():
		return Done{}, context.Cause(ctx)
	}
}

// hung says why the generation counts as hung at now, or "".
func (c *call) hung(now time.Time, prefill, token time.Duration) string {
	first := c.first.Load()
	switch {
	case first == 0 && prefill > 0 && now.Sub(c.started) > prefill:
		return fmt.Sprintf("no first token within the prefill timeout (%s)", prefill)
	case first != 0 && token > 0 && now.Sub(time.Unix(0, c.last.Load())) > token:
		return fmt.Sprintf("no token for the token timeout (%s)", token)
	}
	return ""
}

// stop asks the worker to exit, and kills it if it does not.
func (p *proc) stop() {
	p.once.Do(func() { go p.send(Job{Kind: jobExit}) })
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
		<-p.exited
	}
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// abandon kills a worker that broke the protocol, or whose stream could
// not be written; its calls end with a fault that says why.
func (p *proc) abandon(why error) {
	p.mu.Lock()
	if p.broke == nil {
		p.broke = why
	}
	p.mu.Unlock()
	p.log.Warn("ending an engine worker", "model", p.model, "cause", why)
	p.kill()
}

// read passes the worker's frames on in the order it sent them: each
// chunk to its generation's sink (on this goroutine: a sink is cheap, as
// npu.Sink's callers expect), each outcome to the job's caller after the
// job's chunks. The stream's end is the worker's end: one that closed its
// output and lives on could answer nothing more, so it is killed, and the
// process watcher reports its exit. A frame that breaks the protocol ends
// the worker too.
func (p *proc) read(in *frameReader) {
	for {
		kind, body, err := in.next()
		if err == nil {
			err = p.dispatch(in, kind, body)
		}
		if errors.Is(err, errProtocol) {
			p.abandon(err)
			return
		}
		if err != nil {
			p.kill() // it exited (then this does nothing), or closed its output
			return
		}
	}
}

// dispatch handles one frame from the worker.
func (p *proc) dispatch(in *frameReader, kind byte, body []byte) error {
	switch kind {
	case frameChunk:
		id, text, err := idOf(body)
		if err != nil {
			return err
		}
		if c := p.callOf(id); c != nil {
			return c.chunk(p, string(text))
		}
	case frameVector:
		id, v, err := vectorOf(body)
		if err != nil {
			return err
		}
		if c := p.callOf(id); c != nil {
			return c.vector(v)
		}
	case frameCompiling:
		var c Compiling
		if err := in.decode(body, &c); err != nil {
			return err
		}
		p.mu.Lock()
		p.compiling = c.Device
		p.mu.Unlock()
	case frameDone:
		var d Done
		if err := in.decode(body, &d); err != nil {
			return err
		}
		if c := p.callOf(d.ID); c != nil {
			return c.finish(d)
		}
	default:
		return protocolError("a frame of kind %q", kind)
	}
	return nil
}

func (p *proc) callOf(id int64) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

// chunk passes one streamer callback to the sink; after the sink answered
// STOP or CANCEL the text is dropped (an engine in process would not have
// produced it), and the worker is told the answer. Text for a job that
// takes none, or after its outcome, breaks the protocol: the sink is not
// called after the generation returned.
func (c *call) chunk(p *proc, text string) error {
	if c.sink == nil || c.finished {
		return protocolError("text for job %d (%s) that takes none now", c.job.ID, c.job.Kind)
	}
	now := time.Now().UnixNano()
	c.first.CompareAndSwap(0, now)
	c.last.Store(now)
	c.chunks++
	if c.stoppedAt != 0 {
		return nil
	}
	if st := c.sink(text); st != npu.Running {
		c.stoppedAt = c.chunks
		go func() { _ = p.out.status(c.job.ID, st) }() // a worker gone cannot be told
	}
	return nil
}

// vector adds one of an embedding's vectors: no more than the job's
// inputs, nor bytes than maxVectorBytes.
func (c *call) vector(v []float32) error {
	c.vectorBytes += 4 * len(v)
	if c.job.Kind != jobEmbed || c.finished || len(c.vectors) >= len(c.job.Inputs) || c.vectorBytes > maxVectorBytes {
		return protocolError("a vector job %d (%s of %d inputs) has no room for", c.job.ID, c.job.Kind, len(c.job.Inputs))
	}
	c.vectors = append(c.vectors, v)
	return nil
}

// finish hands the job's outcome to its caller, with the vectors that came
// before it and the completion tokens the sink received: the engine also
// counted those it generated between the sink's STOP or CANCEL and the
// callback at which the worker heard of it.
func (c *call) finish(d Done) error {
	if c.finished {
		return protocolError("a second outcome of job %d", d.ID)
	}
	c.finished = true
	d.Vectors = c.vectors
	if c.stoppedAt > 0 {
		ranTo := d.StoppedAt
		if ranTo == 0 {
			ranTo = d.Chunks // the generation ended before it heard
		}
		if extra := ranTo - c.stoppedAt; extra > 0 {
			d.Result.CompletionTokens -= int(min(extra, int64(d.Result.CompletionTokens)))
		}
	}
	c.done <- d // buffered for the one outcome
	return nil
}
