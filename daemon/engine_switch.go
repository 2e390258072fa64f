package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/worker"
)

// modelsFolder is the models folder as the daemon's registry. The folder
// belongs to the daemon, not to an engine, so a pull works whatever
// engine serves. It is opened at the first use: a fresh install's folder
// may not exist yet (the unit's StateDirectory makes its parent), and a
// daemon that never pulls never makes it.
type modelsFolder struct {
	cfg Config

	mu      sync.Mutex
	catalog *modelstore.Catalog
}

var _ npu.Registry = (*modelsFolder)(nil)

func newModelsFolder(cfg Config) *modelsFolder { return &modelsFolder{cfg: cfg} }

func (f *modelsFolder) open() (*modelstore.Catalog, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.catalog == nil {
		c, err := modelstore.OpenCatalog(modelstore.New(f.cfg.ModelsDir, f.cfg.HubClient()), openvinoLimits(f.cfg))
		if err != nil {
			return nil, ExplainModelsDir(f.cfg.ModelsDir, err)
		}
		f.catalog = c
	}
	return f.catalog, nil
}

// listed is the folder's models, without making the folder: a daemon that
// never pulled lists none.
func (f *modelsFolder) listed() []npu.ModelInfo {
	if _, err := os.Stat(f.cfg.ModelsDir); err != nil {
		return nil
	}
	c, err := f.open()
	if err != nil {
		return nil
	}
	return c.Models()
}

// unserved is each of the folder's models, with why it is not served.
func (f *modelsFolder) unserved(why string) []npu.UnservedModel {
	models := f.listed()
	out := make([]npu.UnservedModel, 0, len(models))
	for _, m := range models {
		out = append(out, npu.UnservedModel{Model: m, Why: why})
	}
	return out
}

// notServable ends a pull whose model cannot be served: the files stay
// (once the engine can serve, a restart serves them), and the error says
// why, what to do, and how to remove them.
func (f *modelsFolder) notServable(repo, why string) error {
	name := hub.ModelName(repo)
	return fmt.Errorf("model %s is pulled into %s, but it cannot be served: %s; `npud doctor` says how to fix it (`npud rm %s` removes it): %w",
		name, f.cfg.ModelsDir, why, name, npu.ErrNotSupported)
}

// simFolder is the models folder under --engine sim: pulls fill it, but
// the simulated engine serves none of its models.
type simFolder struct{ *modelsFolder }

// whySim is why --engine sim serves nothing pulled.
const whySim = "--engine sim serves only its simulated models: serve with --engine auto (the default) or openvino to run pulled models"

func (f simFolder) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	if err := f.modelsFolder.Pull(ctx, name, progress); err != nil {
		return err
	}
	return f.notServable(name, whySim)
}

func (f simFolder) Unserved() []npu.UnservedModel { return f.unserved(whySim) }

func (f *modelsFolder) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	c, err := f.open()
	if err != nil {
		return err
	}
	return ExplainModelsDir(f.cfg.ModelsDir, c.Pull(ctx, name, progress))
}

// ExplainModelsDir adds to an error the models folder's permissions
// caused how to choose another folder (a user who is not root, with the
// service's /var/lib/npud/models, say); other errors are returned as they
// are.
func ExplainModelsDir(dir string, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w: this user may not write the models folder %s: choose a folder of yours with --models-dir DIR (or NPUD_MODELS_DIR), "+
		"or run as root, or pull into the service's folder through the service", err, dir)
}

func (f *modelsFolder) Delete(_ context.Context, name string) error {
	c, err := f.open()
	if err != nil {
		return err
	}
	return c.Delete(name)
}

func (f *modelsFolder) Copy(ctx context.Context, source, destination string) error {
	c, err := f.open()
	if err != nil {
		return err
	}
	return c.Copy(ctx, source, destination)
}

// EngineChange is what changed when --engine auto started serving the
// OpenVINO engine without a restart (/health, /npud/v1/status).
type EngineChange struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// switchingEngine is --engine auto while no model runs: the simulated
// engine serves and the models folder takes pulls; after a pull leaves a
// model there, the OpenVINO engine is started (when its library is found)
// and serves every request from then on, without a restart. Requests the
// simulated engine had admitted finish on it.
type switchingEngine struct {
	cfg   Config
	log   *slog.Logger
	sim   npu.Engine
	store *modelsFolder
	// start starts the OpenVINO engine: nil and why when it cannot serve
	// yet (no library, no model), an error when it failed.
	start func(Config, *slog.Logger) (npu.Engine, string, error)
	// blocked, when set, is why no switch may happen (the local pool was
	// sized for the simulator's concurrent generations).
	blocked string

	switchMu sync.Mutex                 // one switch at a time
	real     atomic.Pointer[npu.Engine] // the OpenVINO engine once it serves
	why      atomic.Pointer[string]     // why the simulated engine serves
	unserved atomic.Pointer[string]     // why the folder's models are not served, after the last try
	change   atomic.Pointer[EngineChange]
	// Set before serving: the workers' observer (the metrics), and what
	// else must learn of the new engine.
	observer worker.Observer
	onChange func(npu.Engine)
}

func newSwitchingEngine(cfg Config, log *slog.Logger, sim npu.Engine, why string,
	start func(Config, *slog.Logger) (npu.Engine, string, error)) *switchingEngine {
	e := &switchingEngine{cfg: cfg, log: log, sim: sim, store: newModelsFolder(cfg), start: start}
	if cfg.SimSlots > 1 {
		e.blocked = fmt.Sprintf("--sim-slots %d sized the scheduler for concurrent generations, which a GenAI pipeline cannot run: restart npud to serve it", cfg.SimSlots)
	}
	e.why.Store(&why)
	e.unserved.Store(&why)
	return e
}

// current is the engine new requests go to.
func (e *switchingEngine) current() npu.Engine {
	if r := e.real.Load(); r != nil {
		return *r
	}
	return e.sim
}

// Why is why the simulated engine serves, while it does.
func (e *switchingEngine) Why() string { return *e.why.Load() }

// Change is what changed, once the OpenVINO engine took over; nil before.
func (e *switchingEngine) Change() *EngineChange { return e.change.Load() }

// isolation is the worker processes' view, once the OpenVINO engine runs
// in them.
func (e *switchingEngine) isolation() (isolatedEngine, bool) {
	w, ok := e.current().(isolatedEngine)
	return w, ok
}

// engineFor is the engine that serves model: the new one, unless only the
// simulated engine knows it (a request it admitted before the switch).
func (e *switchingEngine) engineFor(model string) npu.Engine {
	r := e.real.Load()
	if r == nil {
		return e.sim
	}
	if !serves(*r, model) && serves(e.sim, model) {
		return e.sim
	}
	return *r
}

func serves(engine npu.Engine, model string) bool {
	return slices.ContainsFunc(engine.Models(), func(m npu.ModelInfo) bool { return m.ID == model })
}

func (e *switchingEngine) Name() string            { return e.current().Name() }
func (e *switchingEngine) Simulated() bool         { return e.current().Simulated() }
func (e *switchingEngine) Models() []npu.ModelInfo { return e.current().Models() }

func (e *switchingEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	return e.engineFor(req.Model).Generate(ctx, req, sink)
}

// Describe is the current engine's: the OpenVINO engine's once it serves.
// A request the simulated engine admitted before the switch still finishes
// on it; Load and Unload below answer for that engine's models.
func (e *switchingEngine) Describe() npu.Features { return e.current().Describe() }

func (e *switchingEngine) Load(ctx context.Context, model string) error {
	if engine := e.engineFor(model); engine.Describe().LoadsModels {
		return engine.Load(ctx, model)
	}
	return nil // the simulated engine serves its models at any time
}

func (e *switchingEngine) Unload(model string) error {
	if engine := e.engineFor(model); engine.Describe().LoadsModels {
		return engine.Unload(model)
	}
	return nil
}

func (e *switchingEngine) Reload(ctx context.Context, model string) error {
	return e.engineFor(model).Reload(ctx, model)
}

func (e *switchingEngine) Embed(ctx context.Context, model string, inputs []string, truncate bool) (npu.Embedded, error) {
	return e.engineFor(model).Embed(ctx, model, inputs, truncate)
}

// Rerank implements npu.Reranker: the model's engine reranks, if it can.
func (e *switchingEngine) Rerank(ctx context.Context, model, query string, documents []string, truncate bool) (npu.Reranked, error) {
	r, ok := e.engineFor(model).(npu.Reranker)
	if !ok {
		return npu.Reranked{}, fmt.Errorf("model %q does not support rerank: %w", model, npu.ErrNotSupported)
	}
	return r.Rerank(ctx, model, query, documents, truncate)
}

func (e *switchingEngine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	return e.engineFor(req.Model).Transcribe(ctx, req)
}

func (e *switchingEngine) PromptTokens(req *npu.Request) (int, bool) {
	return e.engineFor(req.Model).PromptTokens(req)
}

func (e *switchingEngine) CountPrompt(ctx context.Context, req *npu.Request) (int, error) {
	return e.engineFor(req.Model).CountPrompt(ctx, req)
}

func (e *switchingEngine) DeviceOf(model string) string { return e.engineFor(model).DeviceOf(model) }

func (e *switchingEngine) DeviceNames() map[string]string { return e.current().DeviceNames() }

func (e *switchingEngine) ModelRestarts(model string) int {
	return e.engineFor(model).ModelRestarts(model)
}

// Close closes both engines: every generation has returned.
func (e *switchingEngine) Close() {
	if r := e.real.Load(); r != nil {
		(*r).Close()
	}
	e.sim.Close()
}

// Pull fetches a model into the models folder; the first one that leaves
// a model there starts the OpenVINO engine.
func (e *switchingEngine) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	if r := e.real.Load(); r != nil {
		if reg, ok := (*r).(npu.Registry); ok {
			return reg.Pull(ctx, name, progress)
		}
	}
	if err := e.store.Pull(ctx, name, progress); err != nil {
		return err
	}
	if why := e.switchAfterPull(name); why != "" {
		return e.store.notServable(name, why)
	}
	return nil
}

// Unserved is the models folder's models while the simulated engine
// serves: pulled, listed as such, removable, not run.
func (e *switchingEngine) Unserved() []npu.UnservedModel {
	if e.real.Load() != nil {
		return nil
	}
	return e.store.unserved(*e.unserved.Load())
}

func (e *switchingEngine) Delete(ctx context.Context, name string) error {
	if r := e.real.Load(); r != nil {
		if reg, ok := (*r).(npu.Registry); ok {
			return reg.Delete(ctx, name)
		}
	}
	if slices.ContainsFunc(e.store.listed(), func(m npu.ModelInfo) bool { return m.ID == name }) {
		return e.store.Delete(ctx, name)
	}
	return fmt.Errorf("cannot delete %q: engine %s serves a fixed set of models: %w", name, e.sim.Name(), npu.ErrNotSupported)
}

func (e *switchingEngine) Copy(ctx context.Context, source, destination string) error {
	if r := e.real.Load(); r != nil {
		if reg, ok := (*r).(npu.Registry); ok {
			return reg.Copy(ctx, source, destination)
		}
	}
	return fmt.Errorf("cannot copy %q to %q: engine %s serves a fixed set of models: %w", source, destination, e.sim.Name(), npu.ErrNotSupported)
}

// switchAfterPull starts the OpenVINO engine after a pull, when it can
// serve; otherwise the simulated engine goes on, and it returns why.
func (e *switchingEngine) switchAfterPull(pulled string) string {
	e.switchMu.Lock()
	defer e.switchMu.Unlock()
	if e.real.Load() != nil {
		return ""
	}
	why := e.blocked
	var engine npu.Engine
	if why == "" {
		var err error
		engine, why, err = e.start(e.cfg, e.log)
		if err != nil {
			engine, why = nil, "the OpenVINO engine did not start: "+err.Error()
		}
	}
	if engine == nil {
		banner := fmt.Sprintf("model %s pulled, but the simulated engine still serves: %s", pulled, why)
		e.why.Store(&banner)
		e.unserved.Store(&why)
		e.log.Warn("the simulated engine still serves after a pull", "model", pulled, "why", why)
		return why
	}
	if w, ok := engine.(isolatedEngine); ok && e.observer != nil {
		w.SetObserver(e.observer)
	}
	change := &EngineChange{From: e.sim.Name(), To: engine.Name(), At: time.Now().UTC(),
		Reason: fmt.Sprintf("model %s pulled and OpenVINO GenAI found: --engine auto serves it without a restart", pulled)}
	e.change.Store(change)
	e.real.Store(&engine)
	if e.onChange != nil {
		e.onChange(engine)
	}
	names := make([]string, 0, 4)
	for _, m := range engine.Models() {
		names = append(names, m.ID)
	}
	e.log.Info("engine changed: the OpenVINO engine serves now, without a restart", "from", change.From, "to", change.To,
		"devices", deviceList(engine), "models", names, "reason", change.Reason)
	return ""
}
