package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Config is the daemon's configuration. Every field has a flag and an
// NPUD_* environment variable; flags win over the environment.
type Config struct {
	Listen string // address to listen on; default 127.0.0.1:11434 (Ollama's)
	Engine string // "sim" (simulated), or "openvino" in a build with the openvino tag

	ModelsDir         string // OpenVINO: one IR export per subfolder
	Device            string // OpenVINO: AUTO, NPU, GPU, GPU.1, CPU
	NPUMaxPromptLen   int    // OpenVINO on NPU: MAX_PROMPT_LEN (0 = GenAI's 1024)
	NPUMinResponseLen int    // OpenVINO on NPU: MIN_RESPONSE_LEN (0 = GenAI's 128)
	NPUPrefillHint    string // OpenVINO on NPU: PREFILL_HINT, DYNAMIC or STATIC
	NPUGenerateHint   string // OpenVINO on NPU: GENERATE_HINT, FAST_COMPILE or BEST_PERF
	CacheDir          string // OpenVINO: compiled-model cache
	HubEndpoint       string // model hub for pull; "" = HF_ENDPOINT, else huggingface.co
	HubToken          string // optional hub token (secret: masked in logs)

	SimTTFT            time.Duration // simulated time to first token
	SimITL             time.Duration // simulated inter-token latency
	SimPromptTokenCost time.Duration // simulated prefill cost per prompt token

	Heartbeat       time.Duration     // keep-alive interval on streams; 0 = off
	MaxQueue        int               // requests waiting for the engine before 503
	QueueTimeout    time.Duration     // longest wait in the queue; 0 = unbounded
	TokenTimeout    time.Duration     // longest gap between tokens before the stream fails
	RequestTimeout  time.Duration     // default generation deadline (timeout_ms); 0 = none
	MaxPendingBytes int               // unread output per stream before it fails
	MaxBodyBytes    int64             // largest request body
	DrainTimeout    time.Duration     // grace for in-flight streams on shutdown
	KeepAlive       time.Duration     // how long an idle model stays loaded; negative = forever
	MaxLoadedModels int               // models in memory at once; 0 = no cap
	Preload         []string          // models loaded at start and kept loaded
	Aliases         map[string]string // extra model names: alias → served model

	LogLevel  slog.Level
	LogFormat string // "text" or "json"
}

// option describes one setting: its flag, environment variable and help.
type option struct {
	name  string
	usage string
	bind  func(fs *flag.FlagSet, name, usage string)
}

// EnvName is the environment variable of a flag: --max-queue → NPUD_MAX_QUEUE.
func EnvName(flagName string) string {
	return "NPUD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (c *Config) options() []option {
	str := func(p *string, def string) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.StringVar(p, n, def, u) }
	}
	dur := func(p *time.Duration, def time.Duration) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.DurationVar(p, n, def, u) }
	}
	num := func(p *int, def int) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.IntVar(p, n, def, u) }
	}
	return []option{
		{"listen", "address to listen on", str(&c.Listen, "127.0.0.1:11434")},
		{"engine", "inference engine: sim (simulated, no inference) or openvino (builds with the openvino tag)", str(&c.Engine, "sim")},
		{"models-dir", "openvino: directory with one OpenVINO IR model per subfolder", str(&c.ModelsDir, "/var/lib/npud/models")},
		{"device", "openvino: AUTO (NPU, then GPU, then CPU) or a device name", str(&c.Device, "AUTO")},
		{"npu-max-prompt-len", "openvino on NPU: longest prompt in tokens (0 = GenAI's 1024)", num(&c.NPUMaxPromptLen, 0)},
		{"npu-min-response-len", "openvino on NPU: tokens reserved for the answer (0 = GenAI's 128)", num(&c.NPUMinResponseLen, 0)},
		{"npu-prefill-hint", "openvino on NPU: PREFILL_HINT, DYNAMIC or STATIC (empty = GenAI's default)", str(&c.NPUPrefillHint, "")},
		{"npu-generate-hint", "openvino on NPU: GENERATE_HINT, FAST_COMPILE or BEST_PERF (empty = GenAI's default)", str(&c.NPUGenerateHint, "")},
		{"hub-endpoint", "model hub for pull, Hugging Face-compatible (empty = HF_ENDPOINT, else https://huggingface.co)", str(&c.HubEndpoint, "")},
		{"hub-token", "model hub token for pull (prefer the environment variable)", str(&c.HubToken, "")},
		{"cache-dir", "openvino: compiled-model cache, so the slow first NPU compile happens once", str(&c.CacheDir, "/var/cache/npud")},
		{"sim-ttft", "simulated engine: time to first token", dur(&c.SimTTFT, 200*time.Millisecond)},
		{"sim-itl", "simulated engine: time between tokens", dur(&c.SimITL, 30*time.Millisecond)},
		{"sim-prompt-token-cost", "simulated engine: extra prefill time per prompt token", dur(&c.SimPromptTokenCost, 100*time.Microsecond)},
		{"heartbeat", "keep-alive interval on streams, also while queued (0 = off)", dur(&c.Heartbeat, 15*time.Second)},
		{"max-queue", "requests that may wait for the engine; more get 503", num(&c.MaxQueue, 64)},
		{"queue-timeout", "longest wait for the engine before 503 (0 = no limit)", dur(&c.QueueTimeout, 5*time.Minute)},
		{"token-timeout", "longest the engine may go without a token before the stream fails", dur(&c.TokenTimeout, 180*time.Second)},
		{"request-timeout", "default generation deadline; the stream then finishes with finish_reason length (0 = none)", dur(&c.RequestTimeout, 0)},
		{"max-pending-bytes", "unread output a stream may hold for a slow client before it fails", num(&c.MaxPendingBytes, 1<<20)},
		{"max-body-bytes", "largest request body accepted", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxBodyBytes, n, 4<<20, u) }},
		{"drain-timeout", "on SIGTERM, how long in-flight streams may take to finish", dur(&c.DrainTimeout, 30*time.Second)},
		{"keep-alive", "how long a model stays loaded after its last request (negative = forever)", dur(&c.KeepAlive, 5*time.Minute)},
		{"preload", "comma-separated models to load at start and keep loaded", func(fs *flag.FlagSet, n, u string) {
			fs.Func(n, u, func(v string) error {
				c.Preload = nil // the flag replaces the environment's list
				for _, m := range strings.Split(v, ",") {
					if m = strings.TrimSpace(m); m != "" {
						c.Preload = append(c.Preload, m)
					}
				}
				return nil
			})
		}},
		{"alias", "extra model names, ALIAS=MODEL, comma-separated or repeated", func(fs *flag.FlagSet, n, u string) {
			fs.Func(n, u, func(v string) error {
				for _, pair := range strings.Split(v, ",") {
					alias, model, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if !ok || alias == "" || model == "" {
						return fmt.Errorf("%q: want ALIAS=MODEL", pair)
					}
					if c.Aliases == nil {
						c.Aliases = map[string]string{}
					}
					c.Aliases[alias] = model
				}
				return nil
			})
		}},
		{"max-loaded-models", "models kept in memory at once; loading one more unloads the least recently used (0 = no cap)", num(&c.MaxLoadedModels, 2)},
		{"log-level", "debug, info, warn or error", func(fs *flag.FlagSet, n, u string) { fs.TextVar(&c.LogLevel, n, slog.LevelInfo, u) }},
		{"log-format", "text or json", str(&c.LogFormat, "text")},
	}
}

// ParseServe reads the configuration of `npud serve` from args and the
// environment (getenv).
func ParseServe(args []string, getenv func(string) string, usageOut io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("npud serve", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	opts := cfg.options()
	for _, o := range opts {
		o.bind(fs, o.name, fmt.Sprintf("%s (env %s)", o.usage, EnvName(o.name)))
	}
	// The environment is applied as if it were flags given first, so real
	// flags (parsed next) override it.
	for _, o := range opts {
		if v := getenv(EnvName(o.name)); v != "" {
			if err := fs.Set(o.name, v); err != nil {
				return Config{}, fmt.Errorf("%s=%q: %w", EnvName(o.name), v, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return cfg, cfg.Validate()
}

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Engine == "sim" || (c.Engine == "openvino" && openvinoBuilt), "--engine %q: %s", c.Engine, engineChoices())
	check(c.NPUMaxPromptLen >= 0 && c.NPUMinResponseLen >= 0, "--npu-max-prompt-len and --npu-min-response-len must not be negative")
	check(c.NPUPrefillHint == "" || c.NPUPrefillHint == "DYNAMIC" || c.NPUPrefillHint == "STATIC",
		"--npu-prefill-hint must be DYNAMIC or STATIC, got %q", c.NPUPrefillHint)
	check(c.NPUGenerateHint == "" || c.NPUGenerateHint == "FAST_COMPILE" || c.NPUGenerateHint == "BEST_PERF",
		"--npu-generate-hint must be FAST_COMPILE or BEST_PERF, got %q", c.NPUGenerateHint)
	check(c.MaxQueue >= 0, "--max-queue must be 0 or more, got %d", c.MaxQueue)
	check(c.MaxLoadedModels >= 0, "--max-loaded-models must be 0 or more, got %d", c.MaxLoadedModels)
	check(c.MaxPendingBytes > 0, "--max-pending-bytes must be positive, got %d", c.MaxPendingBytes)
	check(c.MaxBodyBytes > 0, "--max-body-bytes must be positive, got %d", c.MaxBodyBytes)
	check(c.LogFormat == "text" || c.LogFormat == "json", "--log-format must be text or json, got %q", c.LogFormat)
	for name, d := range map[string]time.Duration{
		"sim-ttft": c.SimTTFT, "sim-itl": c.SimITL, "sim-prompt-token-cost": c.SimPromptTokenCost,
		"heartbeat": c.Heartbeat, "queue-timeout": c.QueueTimeout, "token-timeout": c.TokenTimeout,
		"request-timeout": c.RequestTimeout, "drain-timeout": c.DrainTimeout,
	} {
		check(d >= 0, "--%s must not be negative, got %s", name, d)
	}
	return errors.Join(errs...)
}

func engineChoices() string {
	if openvinoBuilt {
		return `use "sim" (simulated) or "openvino"`
	}
	return `this build has only the simulated engine "sim" (make build-openvino adds "openvino")`
}

// LogValue lists the configuration in logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen", c.Listen), slog.String("engine", c.Engine),
		slog.String("models_dir", c.ModelsDir), slog.String("device", c.Device),
		slog.String("hub_endpoint", c.HubEndpoint), slog.Bool("hub_token_set", c.HubToken != ""),
		slog.Duration("heartbeat", c.Heartbeat), slog.Int("max_queue", c.MaxQueue),
		slog.Duration("queue_timeout", c.QueueTimeout), slog.Duration("token_timeout", c.TokenTimeout),
		slog.Duration("request_timeout", c.RequestTimeout), slog.Int("max_pending_bytes", c.MaxPendingBytes),
		slog.Int64("max_body_bytes", c.MaxBodyBytes), slog.Duration("drain_timeout", c.DrainTimeout),
		slog.Duration("keep_alive", c.KeepAlive), slog.Int("max_loaded_models", c.MaxLoadedModels),
		slog.Any("preload", c.Preload), slog.Any("aliases", c.Aliases),
	)
}
