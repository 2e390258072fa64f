package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/npu/worker"
)

// workerConfigEnv carries the daemon's configuration to a worker process.
const workerConfigEnv = "NPUD_WORKER_CONFIG"

// IsWorker reports whether this process was started as an engine worker.
// Test binaries that start daemons check it first in TestMain, and serve
// as the worker themselves (os.Executable is the test binary).
func IsWorker() bool { return os.Getenv(workerConfigEnv) != "" }

// RunWorker is `npud worker`: it runs the engine the daemon configured and
// serves the daemon over standard input and output. It is started by the
// daemon only.
func RunWorker(ctx context.Context) int {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(workerConfigEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "npud worker: started without a valid %s: %v\n", workerConfigEnv, err)
		return 2
	}
	log := NewLogger(cfg.LogFormat, cfg.LogLevel, os.Stderr).With("worker", os.Getpid())
	conn, err := workerStdio()
	if err != nil {
		log.Error("npud worker: standard streams", "err", err)
		return 1
	}
	err = worker.Serve(ctx, conn, func(compiling func(model, device string)) (npu.Engine, error) {
		return workerEngine(cfg, compiling, log)
	})
	if err != nil {
		log.Error("npud worker stopped", "err", err)
		return 1
	}
	return 0
}

// stdioConn is the worker's end of the daemon's connection.
type stdioConn struct {
	io.Reader
	io.Writer
}

func (stdioConn) Close() error { return nil }

// isolated says whether engine runs in worker processes.
func isolated(cfg Config, engine string) bool {
	switch cfg.Isolation {
	case "process":
		return true
	case "none":
		return false
	}
	return engine == "openvino"
}

// newWorkerEngine starts engine ("openvino" or "sim") in worker processes.
func newWorkerEngine(cfg Config, engine string, log *slog.Logger) (npu.Engine, error) {
	payload, err := json.Marshal(workerConfig(cfg, engine))
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding npud's own binary for its workers: %w", err)
	}
	var extraEnv []string
	if engine == "openvino" {
		extraEnv = tokenizersEnv(cfg.OpenVINOLib)
	}
	command := func() *exec.Cmd {
		// Not CommandContext: a worker lives as long as the engine (Close
		// stops it after the drain), not as long as a request or the
		// signal context, which ends when the drain begins.
		cmd := exec.Command(exe, "worker") //nolint:noctx // see above
		cmd.Env = append(append(NativeChildEnviron(os.Environ()), extraEnv...), workerConfigEnv+"="+string(payload))
		cmd.Stderr = os.Stderr // the worker logs as the daemon does
		return cmd
	}
	var catalog worker.Catalog
	simulated := engine == "sim"
	if simulated {
		catalog = sim.New(sim.Config{})
	} else {
		store, err := modelstore.OpenCatalog(modelstore.New(cfg.ModelsDir, cfg.HubClient()), openvinoLimits(cfg))
		if err != nil {
			return nil, err
		}
		catalog = store
	}
	w, err := worker.New(context.Background(), worker.Config{
		Name: engine, Simulated: simulated, Catalog: catalog, Command: command, Device: cfg.Device,
		PrefillTimeout: cfg.PrefillTimeout, TokenTimeout: cfg.TokenTimeout,
		RestartBackoff: cfg.RestartBackoff,
		Health:         worker.HealthConfig{Failures: cfg.DeviceFailures, Window: cfg.DeviceFailureWindow, ProbeAfter: cfg.DeviceProbeAfter},
		Crashes:        worker.CrashConfig{Anonymous: anonymous},
		Log:            log,
	})
	if err != nil {
		return nil, err
	}
	if store, ok := catalog.(*modelstore.Catalog); ok {
		return &registryWorkers{Engine: w, catalog: store}, nil
	}
	return w, nil
}

// workerConfig is what a worker running engine needs of cfg, and nothing
// else: no API keys, hub token, upstreams (their keys and URLs) or limits
// reach a worker's environment, where a crashed worker's core dump would
// keep them.
func workerConfig(cfg Config, engine string) Config {
	w := Config{
		Engine: engine, Isolation: "none",
		SimTTFT: cfg.SimTTFT, SimITL: cfg.SimITL, SimPromptTokenCost: cfg.SimPromptTokenCost,
		OpenVINOLib: cfg.OpenVINOLib, ModelsDir: cfg.ModelsDir, Device: cfg.Device, CacheDir: cfg.CacheDir,
		NPUMaxPromptLen: cfg.NPUMaxPromptLen, NPUMinResponseLen: cfg.NPUMinResponseLen,
		NPUPrefillHint: cfg.NPUPrefillHint, NPUGenerateHint: cfg.NPUGenerateHint,
		NPUPrefillChunk: cfg.NPUPrefillChunk, NPUPrefixCaching: cfg.NPUPrefixCaching,
		NPUOperatorSet: cfg.NPUOperatorSet,
		LogFormat:      cfg.LogFormat,
	}
	w.LogLevel = cfg.LogLevel
	return w
}

// NativeChildEnviron is environ without npud's own settings (NPUD_*: API
// keys, the hub token, upstream keys) and the hub's tokens: what a child
// process that loads the native libraries gets (an engine worker, whose
// configuration comes in NPUD_WORKER_CONFIG; npud doctor's probe). The
// rest stays, for the native libraries and the library search
// (OpenVINO_DIR, PATH).
func NativeChildEnviron(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name) // Windows names are case-insensitive
		if strings.HasPrefix(upper, "NPUD_") || upper == "HF_TOKEN" || upper == "HUGGING_FACE_HUB_TOKEN" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// workerEngine is the engine inside a worker process.
func workerEngine(cfg Config, compiling func(model, device string), log *slog.Logger) (npu.Engine, error) {
	switch cfg.Engine {
	case "sim":
		return sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, PromptTokenCost: cfg.SimPromptTokenCost}), nil
	case "openvino":
		return openvinoWorkerEngine(cfg, compiling, log)
	}
	return nil, fmt.Errorf("a worker cannot run engine %q", cfg.Engine)
}

// registryWorkers is the worker engine with the models folder's registry:
// the daemon lists, pulls, copies and deletes; workers only run models.
type registryWorkers struct {
	*worker.Engine
	catalog *modelstore.Catalog
}

var _ npu.Registry = (*registryWorkers)(nil)

func (r *registryWorkers) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	return r.catalog.Pull(ctx, name, progress)
}

func (r *registryWorkers) Delete(_ context.Context, name string) error { return r.catalog.Delete(name) }

func (r *registryWorkers) Copy(ctx context.Context, source, destination string) error {
	return r.catalog.Copy(ctx, source, destination)
}
