package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/npud/npud/npu/hub"
)

// Config is the daemon's configuration. Every field has a flag, an NPUD_*
// environment variable and a key in the configuration file; flags win over
// the environment, which wins over the file.
type Config struct {
	ConfigFile string // the TOML file read first ("" = none)

	Listen      string // address to listen on; default 127.0.0.1:11434 (Ollama's)
	Engine      string // "auto", "openvino" or "sim" (simulated)
	OpenVINOLib string // --openvino-lib: GenAI's C library, or a folder holding it; "" = discovery
	// Isolation: "process" runs the engine in worker processes (a native
	// crash or hang ends that model's streams, not the daemon), "none" in
	// the daemon, "auto" process for OpenVINO and none for the simulator.
	Isolation           string
	PrefillTimeout      time.Duration // process isolation: no first token within it and the worker is hung
	RestartBackoff      time.Duration // first wait before restarting a crashed worker (doubles, up to 30s)
	DeviceFailures      int           // crashes or hangs within DeviceFailureWindow that mark a device unhealthy
	DeviceFailureWindow time.Duration
	DeviceProbeAfter    time.Duration // an unhealthy device is tried again this long after its last failure

	ModelsDir         string // OpenVINO: one IR export per subfolder
	Device            string // OpenVINO: AUTO, NPU, GPU, GPU.1, CPU
	NPUMaxPromptLen   int    // OpenVINO on NPU: MAX_PROMPT_LEN (0 = GenAI's 1024; npud's default 16384, for agents)
	NPUMinResponseLen int    // OpenVINO on NPU: MIN_RESPONSE_LEN (0 = GenAI's 128; npud's default 1024)
	NPUPrefillChunk   int    // OpenVINO on NPU: NPUW_LLM_PREFILL_CHUNK_SIZE (0 = NPUW's 1024)
	NPUPrefixCaching  bool   // OpenVINO on NPU: NPUW_LLM_ENABLE_PREFIX_CACHING (npud's default on)
	NPUPrefillHint    string // OpenVINO on NPU: PREFILL_HINT, DYNAMIC or STATIC
	NPUGenerateHint   string // OpenVINO on NPU: GENERATE_HINT, FAST_COMPILE or BEST_PERF
	// NPUOperatorSet names the engine properties of the npu-* keys the
	// operator set (file, environment or flag) rather than left at npud's
	// defaults: a model folder's npud-properties.json does not override
	// them. Derived when the configuration is read; not a key itself.
	NPUOperatorSet []string `config:"derived"`
	CacheDir       string   // OpenVINO: compiled-model cache
	HubEndpoint    string   // model hub for pull; "" = HF_ENDPOINT, else huggingface.co
	HubToken       string   // optional hub token (secret: masked in logs)
	MaxModelBytes  int64    // a pull of a larger repository is refused; 0 = no cap

	SimTTFT            time.Duration // simulated time to first token
	SimITL             time.Duration // simulated inter-token latency
	SimPromptTokenCost time.Duration // simulated prefill cost per prompt token
	SimSlots           int           // simulated generations at once (benchmarks of the serving layer)

	Heartbeat       time.Duration // keep-alive interval on streams; 0 = off
	MaxQueue        int           // requests waiting for the engine before 503
	QueueTimeout    time.Duration // longest wait in the queue; 0 = unbounded
	TokenTimeout    time.Duration // longest gap between tokens before the stream fails
	RequestTimeout  time.Duration // default generation deadline (timeout_ms); 0 = none
	MaxPendingBytes int           // unread output per stream before it fails
	DrainTimeout    time.Duration // grace for in-flight streams on shutdown
	DrainDelay      time.Duration // on SIGTERM, keep answering (with 503s) this long before closing the listener
	KeepAlive       time.Duration // how long an idle model stays loaded; negative = forever
	MaxLoadedModels int           // models in memory at once; 0 = no cap
	// Conversation affinity (see serve.Scheduler).
	AffinityMaxOvertakes int           // times a waiting request may be passed over; 0 = plain FIFO
	AffinityMaxWait      time.Duration // after this long a request is never passed over
	AffinityLinger       time.Duration // how long a freed engine waits for a conversation's next turn
	MaxEmbedInputs       int           // inputs of one embedding request
	// Upstreams are other servers' OpenAI-compatible APIs that models are
	// relayed to: NAME=URL;models=A|B[;key=K][;timeout=D][;slots=N].
	Upstreams        []string
	OverflowAfter    time.Duration // a local model's request overflows upstream past this estimated wait; 0 = never
	MaxImages        int           // images one request may carry
	MaxAudioBytes    int64         // largest audio file for transcriptions
	MaxAudioDuration time.Duration // longest audio for transcriptions
	MaxAudioDecodes  int           // uploads decoded at once; 0 = one per CPU
	MaxAudioMemory   int64         // decoded audio held at once across requests; 0 = no bound
	AudioDecoder     string        // ffmpeg for Opus, WebM, M4A: "" = found on PATH, "none" = off
	MaxImageBytes    int64         // largest image file
	MaxImagePixels   int64         // largest image, width × height
	AllowImageURLs   bool          // fetch http(s) image_url addresses
	ImageURLAllow    []string      // CIDRs image URLs may reach beyond public addresses
	// MaxImageMemory bounds the memory decoded images hold across
	// requests (queued and running); MaxRequestImageMemory one request's.
	MaxImageMemory        int64
	MaxRequestImageMemory int64
	ResumeWindow          time.Duration // how long a stream's events stay for resumes and repeated starts
	ResumeMaxBytes        int           // text kept per stream for resumes
	// Stored responses of the Responses API (in memory: a restart forgets them).
	ResponsesMax      int
	ResponsesMaxBytes int64
	ResponsesMaxAge   time.Duration
	WSMaxRequests     int               // generations at once per WebSocket connection
	WSMaxMessages     int               // client messages per Responses WebSocket connection
	Preload           []string          // models loaded at start and kept loaded
	Aliases           map[string]string // extra model names: alias → served model

	// Each tenant's share of the stored responses: a tenant evicts only
	// its own.
	ResponsesMaxPerTenant      int
	ResponsesMaxBytesPerTenant int64

	Security

	LogFormat string // "text" or "json"
}

// Security holds who may call npud and how much.
type Security struct {
	// Reloadable is what SIGHUP changes in the running server.
	Reloadable
	// The rest is read once, at start.
	MaxHeaderBytes int           // largest request header block
	HeaderTimeout  time.Duration // longest time to send the request headers
	TLSCert        string        // certificate file; with TLSKey, serve HTTPS
	TLSKey         string        // private key file
}

// Reloadable is the part of the configuration a reload (SIGHUP) applies
// to the running server, as one typed value; a change anywhere else is
// reported as needing a restart.
type Reloadable struct {
	APIKeys          []APIKey      // bearer tokens; none = no authentication
	APIKeyFile       string        // more keys, one NAME:KEY[:admin] per line; re-read on reload
	NoAuth           bool          // serve without keys even where keys were configured before
	MetricsPublic    bool          // with keys, /metrics for every key, not only admin keys
	PublicPaths      []string      // paths open without a key (GET and HEAD only)
	AllowedHosts     []string      // extra Host names accepted on a loopback listener; "*" = any
	CORSOrigins      []string      // browser origins allowed; empty = localhost origins; "*" = any
	RateLimit        int           // requests per minute per tenant; 0 = no limit
	AuthFailureLimit int           // failed authentications per minute per client address; 0 = no limit
	RateBurst        int           // requests a tenant may make at once within its rate
	MaxStreams       int           // concurrent generations per tenant; 0 = no cap
	BodyReadTimeout  time.Duration // longest time to send the request body
	MaxBodyBytes     int64         // largest request body
	LogLevel         slog.Level
}

// APIKey is one bearer token. Name is the tenant in logs and metrics.
type APIKey struct {
	Name  string
	Key   string
	Admin bool // may call /admin routes
}

// minAPIKeyLen is the shortest API key accepted.
const minAPIKeyLen = 16

// maskAPIKey shows a NAME:KEY[:role] value with its key hidden.
func maskAPIKey(s string) string {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) < 2 {
		return "****"
	}
	parts[1] = "****"
	return strings.Join(parts, ":")
}

// ParseAPIKey reads NAME:KEY or NAME:KEY:admin.
func ParseAPIKey(s string) (APIKey, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return APIKey{}, errors.New("want NAME:KEY or NAME:KEY:admin")
	}
	k := APIKey{Name: parts[0], Key: parts[1]}
	// Short keys fall to guessing; 16 characters is where a random key
	// stops being one.
	if len(k.Key) < minAPIKeyLen {
		return APIKey{}, fmt.Errorf("the key of %q has %d characters: at least %d are needed", k.Name, len(k.Key), minAPIKeyLen)
	}
	if len(parts) == 3 {
		if parts[2] != "admin" {
			return APIKey{}, fmt.Errorf("role %q: the only role is admin", parts[2])
		}
		k.Admin = true
	}
	if strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return APIKey{}, fmt.Errorf("name %q: use letters, digits, '.', '_' and '-' (it becomes a metric label)", k.Name)
	}
	return k, nil
}

// option describes one setting: its flag, environment variable and help.
type option struct {
	name  string
	usage string
	bind  func(fs *flag.FlagSet, name, usage string)
}

// EnvName is the environment variable of a flag: --max-queue → NPUD_MAX_QUEUE.
// API keys are the exception: NPUD_API_KEYS holds a comma-separated list.
func EnvName(flagName string) string {
	if flagName == "api-key" {
		return "NPUD_API_KEYS"
	}
	return "NPUD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// secretOption reports whether a setting's value must never be printed
// whole (upstream specs carry keys and URLs with passwords).
func secretOption(name string) bool {
	return name == "hub-token" || name == "api-key" || name == "upstream"
}

// MaskUpstream shows an upstream spec with its key and its URL's password
// hidden: NAME=URL;models=…;key=**** with the URL's user:xxxxx@.
func MaskUpstream(spec string) string {
	fields := strings.Split(spec, ";")
	if name, rawURL, ok := strings.Cut(fields[0], "="); ok {
		fields[0] = name + "=" + maskURL(strings.TrimSpace(rawURL))
	}
	for i, f := range fields[1:] {
		if k, _, ok := strings.Cut(strings.TrimSpace(f), "="); ok && k == "key" {
			fields[i+1] = "key=****"
		}
	}
	return strings.Join(fields, ";")
}

// maskURL hides a URL's password (user:xxxxx@host, as url.Redacted); a
// URL that does not parse is hidden whole past its scheme, since it may
// hold one.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if scheme, _, ok := strings.Cut(raw, "://"); ok {
			return scheme + "://****"
		}
		return "****"
	}
	return u.Redacted()
}

// layers counts the sources applied so far (file, environment, flags), so
// that a list given in a later source replaces the earlier one instead of
// adding to it, while a repeated flag still adds.
type layers struct {
	current int
	// secretErr holds what was wrong with a secret value. The flag package
	// would print the value itself in its error; a secret's setter records
	// a masked error here instead, and parsing fails with it.
	secretErr   error
	secretErrIn int // the layer it came from: a later layer's list replaces it
	// dirs are the default models and cache folders for who runs npud;
	// the zero value is the service's.
	dirs stateDirs
}

// listValue is a flag holding a list: comma-separated, or repeated.
type listValue struct {
	dst    *[]string
	layers *layers
	setIn  int
	parse  func(string) error // checks one element; nil = any non-empty string
}

func (l *listValue) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l *listValue) Set(v string) error {
	if l.setIn != l.layers.current {
		*l.dst, l.setIn = nil, l.layers.current
	}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if l.parse != nil {
			if err := l.parse(item); err != nil {
				return err
			}
			continue
		}
		*l.dst = append(*l.dst, item)
	}
	return nil
}

func (c *Config) options(ls *layers) []option {
	str := func(p *string, def string) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.StringVar(p, n, def, u) }
	}
	dur := func(p *time.Duration, def time.Duration) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.DurationVar(p, n, def, u) }
	}
	num := func(p *int, def int) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) { fs.IntVar(p, n, def, u) }
	}
	list := func(p *[]string, def []string, parse func(string) error) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, n, u string) {
			*p = def
			fs.Var(&listValue{dst: p, layers: ls, setIn: -1, parse: parse}, n, u)
		}
	}
	var aliasList, keyList []string
	return []option{
		{"config", "TOML configuration file read before the environment and flags (keys are the flag names)", str(&c.ConfigFile, "")},
		{"listen", "address to listen on", str(&c.Listen, "127.0.0.1:11434")},
		{"engine", "inference engine: auto (openvino when OpenVINO GenAI loads and the models folder holds a model, else sim), openvino, or sim (simulated, no inference)", str(&c.Engine, "auto")},
		{"isolation", "where the engine runs: process (worker processes: a native crash or hang ends that model's streams, not npud), none (in npud), auto (process for openvino, none for sim)", str(&c.Isolation, "auto")},
		{"prefill-timeout", "process isolation: a worker with no first token for this long is hung and killed", dur(&c.PrefillTimeout, 10*time.Minute)},
		{"restart-backoff", "process isolation: wait before restarting a crashed worker; doubles per fault, up to 30s", dur(&c.RestartBackoff, 500*time.Millisecond)},
		{"device-failures", "process isolation: crashes or hangs within device-failure-window that mark a device unhealthy", num(&c.DeviceFailures, 3)},
		{"device-failure-window", "process isolation: the window device-failures counts in", dur(&c.DeviceFailureWindow, 10*time.Minute)},
		{"device-probe-after", "process isolation: an unhealthy device is tried again this long after its last failure", dur(&c.DeviceProbeAfter, 5*time.Minute)},
		{"openvino-lib", "OpenVINO GenAI's C library (libopenvino_genai_c.so, openvino_genai_c.dll) or a folder holding it; empty = search OpenVINO_DIR, INTEL_OPENVINO_DIR, /opt/intel/openvino*, a Python wheel, the system", str(&c.OpenVINOLib, "")},
		{"models-dir", "openvino: directory with one OpenVINO IR model per subfolder", str(&c.ModelsDir, ls.dirs.or().models)},
		{"device", "openvino: AUTO (NPU, then GPU, then CPU) or a device name", str(&c.Device, "AUTO")},
		{"npu-max-prompt-len", "openvino on NPU: MAX_PROMPT_LEN, the longest prompt in tokens, the whole templated history (0 = GenAI's 1024)", num(&c.NPUMaxPromptLen, 16384)},
		{"npu-min-response-len", "openvino on NPU: MIN_RESPONSE_LEN, tokens reserved for the answer (0 = GenAI's 128)", num(&c.NPUMinResponseLen, 1024)},
		{"npu-prefill-chunk", "openvino on NPU: NPUW_LLM_PREFILL_CHUNK_SIZE, a power of two (0 = NPUW's 1024)", num(&c.NPUPrefillChunk, 0)},
		{"npu-prefix-caching", "openvino on NPU: NPUW_LLM_ENABLE_PREFIX_CACHING, reuse the KV cache of prompt blocks seen before (needs MAX_PROMPT_LEN above the chunk)", func(fs *flag.FlagSet, n, u string) { fs.BoolVar(&c.NPUPrefixCaching, n, true, u) }},
		{"npu-prefill-hint", "openvino on NPU: PREFILL_HINT, DYNAMIC or STATIC (empty = GenAI's default)", str(&c.NPUPrefillHint, "")},
		{"npu-generate-hint", "openvino on NPU: GENERATE_HINT, FAST_COMPILE or BEST_PERF (empty = GenAI's default)", str(&c.NPUGenerateHint, "")},
		{"hub-endpoint", "model hub for pull, Hugging Face-compatible (empty = HF_ENDPOINT, else https://huggingface.co)", str(&c.HubEndpoint, "")},
		{"hub-token", "model hub token for pull (prefer the environment variable)", str(&c.HubToken, "")},
		{"max-model-bytes", "largest model repository a pull downloads, as the hub announces it (0 = no cap); every pull also needs that much free disk plus 5% (at least 256 MiB)", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxModelBytes, n, 0, u) }},
		{"cache-dir", "openvino: compiled-model cache, so the slow first NPU compile happens once", str(&c.CacheDir, ls.dirs.or().cache)},
		{"sim-ttft", "simulated engine: time to first token", dur(&c.SimTTFT, 200*time.Millisecond)},
		{"sim-itl", "simulated engine: time between tokens", dur(&c.SimITL, 30*time.Millisecond)},
		{"sim-prompt-token-cost", "simulated engine: extra prefill time per prompt token", dur(&c.SimPromptTokenCost, 100*time.Microsecond)},
		{"sim-slots", "simulated engine: generations it runs at once, to load-test the serving layer (a GenAI pipeline runs one)", num(&c.SimSlots, 1)},
		{"heartbeat", "keep-alive interval on streams, also while queued (0 = off)", dur(&c.Heartbeat, 15*time.Second)},
		{"max-queue", "requests that may wait for the engine; more get 503", num(&c.MaxQueue, 64)},
		{"queue-timeout", "longest wait for the engine before 503 (0 = no limit)", dur(&c.QueueTimeout, 5*time.Minute)},
		{"token-timeout", "longest the engine may go without a token before the stream fails", dur(&c.TokenTimeout, 180*time.Second)},
		{"request-timeout", "default generation deadline; the stream then finishes with finish_reason length (0 = none)", dur(&c.RequestTimeout, 0)},
		{"max-pending-bytes", "unread output a stream may hold for a slow client before it fails", num(&c.MaxPendingBytes, 1<<20)},
		{"max-body-bytes", "largest request body accepted (images come base64 in it)", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxBodyBytes, n, 16<<20, u) }},
		{"drain-timeout", "on SIGTERM, how long in-flight streams may take to finish", dur(&c.DrainTimeout, 30*time.Second)},
		{"drain-delay", "on SIGTERM, how long to keep the listener open first, answering /health and new requests with 503 while streams go on, so a load balancer's health check sees the drain and retries elsewhere (0 = close at once)", dur(&c.DrainDelay, 0)},
		{"resume-window", "how long a stream's events are kept after it ends, and a resumable stream runs on with no client; for Idempotency-Key repeats and Last-Event-ID resumes", dur(&c.ResumeWindow, time.Minute)},
		{"resume-max-bytes", "text kept per stream for resumes; a client further behind gets resume_expired", num(&c.ResumeMaxBytes, 1<<20)},
		{"responses-max", "stored responses (/v1/responses with store) kept in memory for previous_response_id and GET, oldest evicted first (0 = none stored)", num(&c.ResponsesMax, 1000)},
		{"responses-max-bytes", "total size of the stored responses, oldest evicted first", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.ResponsesMaxBytes, n, 64<<20, u) }},
		{"responses-max-age", "how long a stored response is kept (0 = until evicted by count or size)", dur(&c.ResponsesMaxAge, 24*time.Hour)},
		{"responses-max-per-tenant", "stored responses each tenant (API key name) may keep, its own oldest evicted first: no tenant evicts another's (0 = --responses-max)", num(&c.ResponsesMaxPerTenant, 250)},
		{"responses-max-bytes-per-tenant", "total size of each tenant's stored responses, its own oldest evicted first (0 = --responses-max-bytes)", func(fs *flag.FlagSet, n, u string) {
			fs.Int64Var(&c.ResponsesMaxBytesPerTenant, n, 16<<20, u)
		}},
		{"ws-max-requests", "generations one WebSocket connection (/npud/v1/streams) may run at once", num(&c.WSMaxRequests, 8)},
		{"ws-max-messages", "client messages one Responses WebSocket connection (GET /v1/responses) may carry; then it asks the client to connect again", num(&c.WSMaxMessages, 10000)},
		{"keep-alive", "how long a model stays loaded after its last request (negative = forever)", dur(&c.KeepAlive, 5*time.Minute)},
		{"preload", "models to load at start and keep loaded, comma-separated", list(&c.Preload, nil, nil)},
		{"alias", "extra model names, ALIAS=MODEL, comma-separated or repeated", list(&aliasList, nil, func(pair string) error {
			alias, model, ok := strings.Cut(pair, "=")
			if !ok || alias == "" || model == "" {
				return fmt.Errorf("%q: want ALIAS=MODEL", pair)
			}
			aliasList = append(aliasList, pair)
			if c.Aliases == nil || len(aliasList) == 1 {
				c.Aliases = map[string]string{}
			}
			c.Aliases[alias] = model
			return nil
		})},
		{"max-embed-inputs", "inputs one embedding request may carry; more are a 400", num(&c.MaxEmbedInputs, 2048)},
		{"upstream", "another server's OpenAI-compatible API to relay models to: NAME=URL;models=A|B[;caps=tools|vision|thinking][;key=KEY][;timeout=60s][;slots=8][;health=5s] (the key also from NPUD_UPSTREAM_<NAME>_KEY), comma-separated or repeated", list(&c.Upstreams, nil, func(spec string) error {
			if ls.secretErr != nil && ls.secretErrIn < ls.current {
				ls.secretErr = nil // this layer's specs replace that layer's
			}
			if _, err := ParseUpstream(spec, func(string) string { return "" }); err != nil {
				// The flag package would print the spec, key included.
				ls.secretErr = errors.Join(ls.secretErr, fmt.Errorf("upstream %q: %w", MaskUpstream(spec), err))
				ls.secretErrIn = ls.current
				return nil
			}
			c.Upstreams = append(c.Upstreams, spec)
			return nil
		})},
		{"overflow-after", "a request for a local model goes to an upstream serving the same model (by name or alias) when its estimated wait for the local engine is longer, or the local queue is full; 0 = never", dur(&c.OverflowAfter, 0)},
		{"max-audio-bytes", "largest audio file for /v1/audio/transcriptions and /translations (also bounded by --max-body-bytes); larger is a 413", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxAudioBytes, n, 25<<20, u) }},
		{"max-audio-duration", "longest audio for /v1/audio/transcriptions and /translations; longer is a 400", dur(&c.MaxAudioDuration, 30*time.Minute)},
		{"max-audio-decodes", "audio uploads decoded at once (before they queue for the engine); more are a 503 with Retry-After; 0 = one per CPU", num(&c.MaxAudioDecodes, 0)},
		{"max-audio-memory", "memory decoded audio (16 kHz samples, and the decoder's buffers while it runs) may hold at once across requests, decoding, queued and running; past it an upload gets 503 with Retry-After; 0 = no bound", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxAudioMemory, n, 256<<20, u) }},
		{"audio-decoder", "ffmpeg, which decodes the uploads npud does not decode itself (Opus, WebM, M4A/AAC): empty = ffmpeg on PATH if there is one, none = never (those formats are a 400), or its path", str(&c.AudioDecoder, "")},
		{"max-images", "images one request may carry, for vision models; more are a 400", num(&c.MaxImages, 4)},
		{"max-image-bytes", "largest image file (JPEG or PNG); larger is a 400", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxImageBytes, n, 8<<20, u) }},
		{"max-image-pixels", "largest image, width × height; checked before decoding, larger is a 400", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxImagePixels, n, 4096*4096, u) }},
		{"allow-image-urls", "fetch http(s) image_url addresses, public ones only (off: only data URLs)", func(fs *flag.FlagSet, n, u string) { fs.BoolVar(&c.AllowImageURLs, n, false, u) }},
		{"image-url-allow", "with --allow-image-urls: address ranges (CIDRs, comma-separated) image URLs may reach besides public addresses, such as a camera network; loopback, private, link-local and metadata addresses are refused otherwise", list(&c.ImageURLAllow, nil, func(s string) error {
			if _, err := netip.ParsePrefix(s); err != nil {
				return fmt.Errorf("want a CIDR such as 192.168.7.0/24: %w", err)
			}
			c.ImageURLAllow = append(c.ImageURLAllow, s)
			return nil
		})},
		{"max-image-memory", "memory decoded images may hold at once across requests, queued and running (decoder buffers counted at their decoded depth); past it an image request gets 503 with Retry-After; 0 = no bound", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxImageMemory, n, 256<<20, u) }},
		{"max-request-image-memory", "memory one request's images may decode to (decoder buffers and RGB pictures); more is a 400; 0 = no bound", func(fs *flag.FlagSet, n, u string) { fs.Int64Var(&c.MaxRequestImageMemory, n, 256<<20, u) }},
		{"max-loaded-models", "models kept in memory at once; loading one more unloads the least recently used (0 = no cap)", num(&c.MaxLoadedModels, 2)},
		{"affinity-max-overtakes", "times a waiting request may be passed over for one that continues the conversation its model ran last (on the NPU its prefix-cache blocks are surely still cached); 0 = plain FIFO", num(&c.AffinityMaxOvertakes, 8)},
		{"affinity-max-wait", "after waiting this long a request is never passed over", dur(&c.AffinityMaxWait, 30*time.Second)},
		{"affinity-linger", "how long a freed engine waits for a conversation's next turn before serving another conversation of the model, for conversations whose client answered within this long last time (agents, not people typing): their prefix-cache blocks stay hot (docs/PERFORMANCE.md); 0 = never", dur(&c.AffinityLinger, 250*time.Millisecond)},
		{"api-key", "API keys NAME:KEY (or NAME:KEY:admin for /admin routes), comma-separated or repeated; none = no authentication", list(&keyList, nil, func(s string) error {
			if ls.secretErr != nil && ls.secretErrIn < ls.current {
				ls.secretErr = nil // this layer's keys replace that layer's
			}
			k, err := ParseAPIKey(s)
			if err != nil {
				ls.secretErr = errors.Join(ls.secretErr, fmt.Errorf("api-key %q: %w", maskAPIKey(s), err))
				ls.secretErrIn = ls.current
				return nil
			}
			keyList = append(keyList, s)
			if len(keyList) == 1 {
				c.APIKeys = nil
			}
			c.APIKeys = append(c.APIKeys, k)
			return nil
		})},
		{"api-key-file", "file of API keys, one NAME:KEY[:admin] per line (# comments); re-read on SIGHUP; a file with no key is an error", str(&c.APIKeyFile, "")},
		{"metrics-public", "with API keys, let every key read /metrics (it names every tenant); by default only admin keys may", func(fs *flag.FlagSet, n, u string) { fs.BoolVar(&c.MetricsPublic, n, false, u) }},
		{"no-auth", "switch authentication off explicitly: without it, a reload that would leave no API key where keys were configured is refused", func(fs *flag.FlagSet, n, u string) { fs.BoolVar(&c.NoAuth, n, false, u) }},
		{"public-paths", "paths open without a key, for GET and HEAD", list(&c.PublicPaths, []string{"/", "/health"}, nil)},
		{"allowed-hosts", "extra Host names accepted when listening on loopback (* = any; protects against DNS rebinding)", list(&c.AllowedHosts, nil, nil)},
		{"cors-origins", "browser origins allowed (empty = http(s) on localhost, 127.0.0.1 and [::1], any port; * = any)", list(&c.CORSOrigins, nil, nil)},
		{"rate-limit", "requests per minute per API key (tenant); 0 = no limit", num(&c.RateLimit, 0)},
		{"auth-failure-limit", "failed authentications per minute per client address (as many at once); past it the address gets 429 until its budget refills; 0 = no limit", num(&c.AuthFailureLimit, 10)},
		{"rate-burst", "requests a tenant may send at once within --rate-limit", num(&c.RateBurst, 10)},
		{"max-streams-per-key", "generations a tenant may run or queue at once; 0 = no cap", num(&c.MaxStreams, 0)},
		{"max-header-bytes", "largest request header block", num(&c.MaxHeaderBytes, 64<<10)},
		{"header-timeout", "longest a client may take to send its request headers", dur(&c.HeaderTimeout, 10*time.Second)},
		{"body-read-timeout", "longest a client may take to send its request body", dur(&c.BodyReadTimeout, 60*time.Second)},
		{"tls-cert", "TLS certificate file (PEM); with --tls-key npud serves HTTPS", str(&c.TLSCert, "")},
		{"tls-key", "TLS private key file (PEM)", str(&c.TLSKey, "")},
		{"log-level", "debug, info, warn or error", func(fs *flag.FlagSet, n, u string) { fs.TextVar(&c.LogLevel, n, slog.LevelInfo, u) }},
		{"log-format", "text or json", str(&c.LogFormat, "text")},
	}
}

// ParseServe reads the configuration of `npud serve`: the file named by
// --config (or NPUD_CONFIG), then the environment (getenv), then args.
func ParseServe(args []string, getenv func(string) string, usageOut io.Writer) (Config, error) {
	cfg, _, err := parseConfig(args, getenv, usageOut)
	return cfg, err
}

// ParseServeWithArgs is ParseServe for a command that takes positional
// arguments among serve's flags (npud pull --local [flags] OWNER/NAME):
// it returns them, in order.
func ParseServeWithArgs(args []string, getenv func(string) string, usageOut io.Writer) (Config, []string, error) {
	var positional []string
	cfg, _, err := parseConfigArgs(args, getenv, usageOut, &positional)
	return cfg, positional, err
}

// parseConfig is ParseServe that also returns the flag set, whose values
// CheckConfig prints.
func parseConfig(args []string, getenv func(string) string, usageOut io.Writer) (Config, *flag.FlagSet, error) {
	return parseConfigArgs(args, getenv, usageOut, nil)
}

// parseConfigArgs is parseConfig that hands the positional arguments to
// positional; nil: there must be none.
func parseConfigArgs(args []string, getenv func(string) string, usageOut io.Writer, positional *[]string) (Config, *flag.FlagSet, error) {
	var cfg Config
	ls := layers{dirs: defaultDirs(runtime.GOOS, os.Geteuid(), getenv)}
	fs := flag.NewFlagSet("npud serve", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	opts := cfg.options(&ls)
	for _, o := range opts {
		o.bind(fs, o.name, fmt.Sprintf("%s (env %s)", o.usage, EnvName(o.name)))
	}
	explainValues(fs)
	// The file is found first (flag over environment), then the sources
	// are applied from the weakest: file, environment, flags.
	path := getenv(EnvName("config"))
	if p, ok := configFlag(args); ok {
		path = p
	}
	if path != "" {
		ls.current = 1
		if err := applyFile(fs, path); err != nil {
			return Config{}, nil, err
		}
	}
	ls.current = 2
	for _, o := range opts {
		if v := getenv(EnvName(o.name)); v != "" {
			if err := fs.Set(o.name, v); err != nil {
				return Config{}, nil, fmt.Errorf("%s=%q: %w", EnvName(o.name), maskIf(o.name, v), err)
			}
		}
	}
	ls.current = 3
	rest, err := ParseFlagsAnywhere(fs, args)
	if err != nil {
		return Config{}, nil, err
	}
	if ls.secretErr != nil {
		return Config{}, nil, ls.secretErr
	}
	if positional != nil {
		*positional = rest
	} else if len(rest) > 0 {
		return Config{}, nil, fmt.Errorf("unexpected arguments: %s", strings.Join(rest, " "))
	}
	cfg.ConfigFile = path
	fs.Visit(func(f *flag.Flag) { // what was set, in any layer
		if prop, ok := npuFlagProperties[f.Name]; ok {
			cfg.NPUOperatorSet = append(cfg.NPUOperatorSet, prop)
		}
	})
	return cfg, fs, cfg.Validate()
}

// npuFlagProperties are the engine properties the npu-* keys set.
var npuFlagProperties = map[string]string{
	"npu-max-prompt-len": "MAX_PROMPT_LEN", "npu-min-response-len": "MIN_RESPONSE_LEN",
	"npu-prefill-chunk": "NPUW_LLM_PREFILL_CHUNK_SIZE", "npu-prefix-caching": "NPUW_LLM_ENABLE_PREFIX_CACHING",
	"npu-prefill-hint": "PREFILL_HINT", "npu-generate-hint": "GENERATE_HINT",
}

// configFlag finds --config in args without parsing the rest.
func configFlag(args []string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasValue {
			return value, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func maskIf(name, v string) string {
	if secretOption(name) {
		return "****"
	}
	return v
}

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Engine == "sim" || c.Engine == "auto" || (c.Engine == "openvino" && OpenVINOBuilt), "--engine %q: %s", c.Engine, engineChoices())
	check(c.Isolation == "auto" || c.Isolation == "process" || c.Isolation == "none", "--isolation must be auto, process or none, got %q", c.Isolation)
	check(c.DeviceFailures >= 1, "--device-failures must be 1 or more, got %d", c.DeviceFailures)
	check(c.NPUMaxPromptLen >= 0 && c.NPUMinResponseLen >= 0, "--npu-max-prompt-len and --npu-min-response-len must not be negative")
	check(c.NPUPrefillChunk >= 0 && c.NPUPrefillChunk&(c.NPUPrefillChunk-1) == 0,
		"--npu-prefill-chunk must be a power of two (NPUW refuses others), got %d", c.NPUPrefillChunk)
	check(c.NPUPrefillHint == "" || c.NPUPrefillHint == "DYNAMIC" || c.NPUPrefillHint == "STATIC",
		"--npu-prefill-hint must be DYNAMIC or STATIC, got %q", c.NPUPrefillHint)
	check(c.NPUGenerateHint == "" || c.NPUGenerateHint == "FAST_COMPILE" || c.NPUGenerateHint == "BEST_PERF",
		"--npu-generate-hint must be FAST_COMPILE or BEST_PERF, got %q", c.NPUGenerateHint)
	check(c.MaxQueue >= 0, "--max-queue must be 0 or more, got %d", c.MaxQueue)
	check(c.MaxEmbedInputs > 0, "--max-embed-inputs must be positive, got %d", c.MaxEmbedInputs)
	check(c.MaxAudioBytes > 0 && c.MaxAudioDuration > 0, "--max-audio-bytes and --max-audio-duration must be positive")
	check(c.MaxAudioDecodes >= 0, "--max-audio-decodes must be 0 or more, got %d", c.MaxAudioDecodes)
	check(c.MaxAudioMemory >= 0, "--max-audio-memory must be 0 or more, got %d", c.MaxAudioMemory)
	check(c.MaxImages >= 0, "--max-images must be 0 or more, got %d", c.MaxImages)
	check(c.MaxImageBytes > 0, "--max-image-bytes must be positive, got %d", c.MaxImageBytes)
	check(c.MaxImagePixels > 0, "--max-image-pixels must be positive, got %d", c.MaxImagePixels)
	check(c.MaxModelBytes >= 0, "--max-model-bytes must be 0 or more, got %d", c.MaxModelBytes)
	check(c.MaxImageMemory >= 0 && c.MaxRequestImageMemory >= 0, "--max-image-memory and --max-request-image-memory must be 0 or more")
	check(c.AffinityMaxOvertakes >= 0 && c.AffinityMaxWait >= 0 && c.AffinityLinger >= 0, "--affinity-max-overtakes, --affinity-max-wait and --affinity-linger must be 0 or more")
	check(c.MaxLoadedModels >= 0, "--max-loaded-models must be 0 or more, got %d", c.MaxLoadedModels)
	check(c.MaxPendingBytes > 0, "--max-pending-bytes must be positive, got %d", c.MaxPendingBytes)
	check(c.SimSlots >= 1, "--sim-slots must be 1 or more, got %d", c.SimSlots)
	check(c.WSMaxRequests > 0, "--ws-max-requests must be positive, got %d", c.WSMaxRequests)
	check(c.WSMaxMessages > 0, "--ws-max-messages must be positive, got %d", c.WSMaxMessages)
	check(c.ResumeMaxBytes > 0, "--resume-max-bytes must be positive, got %d", c.ResumeMaxBytes)
	check(c.ResponsesMax >= 0 && c.ResponsesMaxBytes > 0, "--responses-max must be 0 or more and --responses-max-bytes positive")
	check(c.ResponsesMaxPerTenant >= 0 && c.ResponsesMaxBytesPerTenant >= 0, "--responses-max-per-tenant and --responses-max-bytes-per-tenant must be 0 or more")
	check(c.MaxBodyBytes > 0, "--max-body-bytes must be positive, got %d", c.MaxBodyBytes)
	check(c.LogFormat == "text" || c.LogFormat == "json", "--log-format must be text or json, got %q", c.LogFormat)
	check(c.RateLimit >= 0 && c.MaxStreams >= 0, "--rate-limit and --max-streams-per-key must be 0 or more")
	check(c.AuthFailureLimit >= 0, "--auth-failure-limit must be 0 or more, got %d", c.AuthFailureLimit)
	check(c.RateLimit == 0 || c.RateBurst > 0, "--rate-burst must be positive when --rate-limit is set, got %d", c.RateBurst)
	check(c.MaxHeaderBytes > 0, "--max-header-bytes must be positive, got %d", c.MaxHeaderBytes)
	check((c.TLSCert == "") == (c.TLSKey == ""), "--tls-cert and --tls-key go together")
	for _, p := range c.PublicPaths {
		check(strings.HasPrefix(p, "/"), "--public-paths: %q must start with /", p)
	}
	if keys, err := c.Keys(); err != nil {
		errs = append(errs, err)
	} else {
		check(!c.NoAuth || len(keys) == 0, "--no-auth and API keys exclude each other")
	}
	for name, d := range map[string]time.Duration{
		"sim-ttft": c.SimTTFT, "sim-itl": c.SimITL, "sim-prompt-token-cost": c.SimPromptTokenCost,
		"heartbeat": c.Heartbeat, "queue-timeout": c.QueueTimeout, "token-timeout": c.TokenTimeout,
		"request-timeout": c.RequestTimeout, "drain-timeout": c.DrainTimeout, "prefill-timeout": c.PrefillTimeout,
		"restart-backoff": c.RestartBackoff, "device-failure-window": c.DeviceFailureWindow, "device-probe-after": c.DeviceProbeAfter,
		"header-timeout": c.HeaderTimeout, "resume-window": c.ResumeWindow, "responses-max-age": c.ResponsesMaxAge, "body-read-timeout": c.BodyReadTimeout,
	} {
		check(d >= 0, "--%s must not be negative, got %s", name, d)
	}
	return errors.Join(errs...)
}

func engineChoices() string {
	if OpenVINOBuilt {
		return `use "auto", "openvino" or "sim" (simulated)`
	}
	return `this build has no cgo, so only "auto" and the simulated engine "sim" (build with CGO_ENABLED=1 for "openvino")`
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
		slog.String("config_file", c.ConfigFile), slog.Any("api_keys", keyNames(c.APIKeys)),
		slog.String("api_key_file", c.APIKeyFile), slog.Int("rate_limit", c.RateLimit),
		slog.Int("max_streams_per_key", c.MaxStreams), slog.Bool("tls", c.TLSCert != ""),
	)
}

// keyNames lists key names only: the keys themselves never reach a log.
func keyNames(keys []APIKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return names
}

// Keys returns every API key: those set directly, then those in
// APIKeyFile. Names and keys must be unique.
func (s Security) Keys() ([]APIKey, error) {
	keys := append([]APIKey(nil), s.APIKeys...)
	inFile := 0
	if s.APIKeyFile != "" {
		data, err := os.ReadFile(s.APIKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--api-key-file: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, err := ParseAPIKey(line)
			if err != nil {
				return nil, fmt.Errorf("--api-key-file %s:%d: %w", s.APIKeyFile, i+1, err)
			}
			keys = append(keys, k)
			inFile++
		}
		// An empty or comment-only file is a mistake (a truncated write, the
		// wrong path), never a way to switch authentication off: fail closed.
		if inFile == 0 {
			return nil, fmt.Errorf("--api-key-file %s holds no API key (to serve without keys, remove the setting or use --no-auth)", s.APIKeyFile)
		}
	}
	names, secrets := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		if names[k.Name] {
			return nil, fmt.Errorf("API key name %q is used twice", k.Name)
		}
		if secrets[k.Key] {
			return nil, fmt.Errorf("API key %q reuses another key's secret", k.Name)
		}
		names[k.Name], secrets[k.Key] = true, true
	}
	return keys, nil
}

// stateDirs are the default models folder and compiled-model cache.
type stateDirs struct{ models, cache string }

// or is d, else the service's folders.
func (d stateDirs) or() stateDirs {
	if d.models == "" {
		return serviceDirs(runtime.GOOS, os.Getenv)
	}
	return d
}

// serviceDirs are where the service keeps its models and compiled-model
// cache: the systemd unit's StateDirectory and CacheDirectory on Linux,
// %ProgramData%\npud on Windows.
func serviceDirs(goos string, getenv func(string) string) stateDirs {
	if goos != "windows" {
		return stateDirs{models: "/var/lib/npud/models", cache: "/var/cache/npud"}
	}
	base := getenv("ProgramData")
	if base == "" {
		base = `C:\ProgramData`
	}
	return stateDirs{models: filepath.Join(base, "npud", "models"), cache: filepath.Join(base, "npud", "cache")}
}

// defaultDirs are the default folders for who runs npud. Root, Windows and
// a systemd unit (which names its own folders) get the service's; anyone
// else folders of their own, as the XDG base directories place them
// ($XDG_STATE_HOME/npud/models, else ~/.local/state/npud/models;
// $XDG_CACHE_HOME/npud, else ~/.cache/npud), so `npud serve` and
// `npud pull` work without root. Without a home, the service's again: the
// error then says --models-dir.
func defaultDirs(goos string, euid int, getenv func(string) string) stateDirs {
	service := serviceDirs(goos, getenv)
	if goos == "windows" || euid == 0 {
		return service
	}
	if state := getenv("STATE_DIRECTORY"); state != "" { // a systemd unit's StateDirectory
		d := stateDirs{models: filepath.Join(strings.Split(state, ":")[0], "models"), cache: service.cache}
		if cache := getenv("CACHE_DIRECTORY"); cache != "" {
			d.cache = strings.Split(cache, ":")[0]
		}
		return d
	}
	home := getenv("HOME")
	xdg := func(name, fallback string) string {
		if dir := getenv(name); filepath.IsAbs(dir) { // the spec ignores relative ones
			return dir
		}
		if filepath.IsAbs(home) {
			return filepath.Join(home, fallback)
		}
		return ""
	}
	state, cache := xdg("XDG_STATE_HOME", filepath.Join(".local", "state")), xdg("XDG_CACHE_HOME", ".cache")
	if state == "" || cache == "" {
		return service
	}
	return stateDirs{models: filepath.Join(state, "npud", "models"), cache: filepath.Join(cache, "npud")}
}

// HubClient is the model hub client the configuration describes (for the
// models this daemon pulls, and `npud pull --local`).
func (c Config) HubClient() *hub.Client {
	return &hub.Client{Endpoint: c.HubEndpoint, Token: c.HubToken, MaxModelBytes: c.MaxModelBytes}
}
