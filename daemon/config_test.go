package daemon

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(pairs ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseServeDefaults(t *testing.T) {
	cfg, err := ParseServe(nil, env(), io.Discard)
	require.NoError(t, err)
	want := Config{
		Listen:                "127.0.0.1:11434", // Ollama's address, so Ollama tools work untouched
		Engine:                "auto",
		Isolation:             "auto",
		PrefillTimeout:        10 * time.Minute,
		RestartBackoff:        500 * time.Millisecond,
		DeviceFailures:        3,
		DeviceFailureWindow:   10 * time.Minute,
		DeviceProbeAfter:      5 * time.Minute,
		ModelsDir:             "/var/lib/npud/models",
		Device:                "AUTO",
		NPUMaxPromptLen:       16384,
		NPUMinResponseLen:     1024,
		NPUPrefixCaching:      true,
		CacheDir:              "/var/cache/npud",
		SimTTFT:               200 * time.Millisecond,
		SimITL:                30 * time.Millisecond,
		SimPromptTokenCost:    100 * time.Microsecond,
		SimSlots:              1,
		Heartbeat:             15 * time.Second,
		MaxQueue:              64,
		QueueTimeout:          5 * time.Minute,
		TokenTimeout:          180 * time.Second,
		RequestTimeout:        0,
		MaxPendingBytes:       1 << 20,
		DrainTimeout:          30 * time.Second,
		KeepAlive:             5 * time.Minute,
		ResumeWindow:          time.Minute,
		ResumeMaxBytes:        1 << 20,
		ResponsesMax:          1000,
		ResponsesMaxBytes:     64 << 20,
		ResponsesMaxAge:       24 * time.Hour,
		WSMaxRequests:         8,
		WSMaxMessages:         10000,
		MaxLoadedModels:       2,
		MaxEmbedInputs:        2048,
		MaxImages:             4,
		MaxAudioBytes:         25 << 20,
		MaxAudioDuration:      30 * time.Minute,
		MaxAudioMemory:        256 << 20,
		MaxImageBytes:         8 << 20,
		MaxImagePixels:        4096 * 4096,
		MaxImageMemory:        256 << 20,
		MaxRequestImageMemory: 256 << 20,
		AffinityMaxOvertakes:  8,
		AffinityMaxWait:       30 * time.Second,
		AffinityLinger:        250 * time.Millisecond,
		Security: Security{
			Reloadable: Reloadable{
				PublicPaths:      []string{"/", "/health"},
				RateBurst:        10,
				AuthFailureLimit: 10,
				BodyReadTimeout:  time.Minute,
				MaxBodyBytes:     16 << 20,
				LogLevel:         slog.LevelInfo,
			},
			MaxHeaderBytes: 64 << 10,
			HeaderTimeout:  10 * time.Second,
		},
		LogFormat: "text",

		ResponsesMaxPerTenant:      250,
		ResponsesMaxBytesPerTenant: 16 << 20,
	}
	assert.Equal(t, want, cfg)
	assert.NoError(t, cfg.Validate(), "the defaults are valid")
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"max-queue":             "NPUD_MAX_QUEUE",
		"listen":                "NPUD_LISTEN",
		"sim-prompt-token-cost": "NPUD_SIM_PROMPT_TOKEN_COST",
	} {
		assert.Equal(t, want, EnvName(flagName))
	}
}

func TestEveryFlagHasAnEnvironmentVariable(t *testing.T) {
	dir := t.TempDir()
	emptyConfig := filepath.Join(dir, "npud.toml")
	require.NoError(t, os.WriteFile(emptyConfig, []byte("# nothing set\n"), 0o600))
	keyFile := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(keyFile, []byte("# tenants\nbob:k3-0123456789abcdef\n"), 0o600))
	tests := []struct {
		flag, value string
		get         func(Config) any
		want        any
	}{
		{"listen", "127.0.0.1:9999", func(c Config) any { return c.Listen }, "127.0.0.1:9999"},
		{"engine", "sim", func(c Config) any { return c.Engine }, "sim"},
		{"openvino-lib", "/opt/ov/lib", func(c Config) any { return c.OpenVINOLib }, "/opt/ov/lib"},
		{"isolation", "process", func(c Config) any { return c.Isolation }, "process"},
		{"prefill-timeout", "2m", func(c Config) any { return c.PrefillTimeout }, 2 * time.Minute},
		{"restart-backoff", "1s", func(c Config) any { return c.RestartBackoff }, time.Second},
		{"device-failures", "5", func(c Config) any { return c.DeviceFailures }, 5},
		{"device-failure-window", "1h", func(c Config) any { return c.DeviceFailureWindow }, time.Hour},
		{"device-probe-after", "30m", func(c Config) any { return c.DeviceProbeAfter }, 30 * time.Minute},
		{"sim-ttft", "5ms", func(c Config) any { return c.SimTTFT }, 5 * time.Millisecond},
		{"sim-itl", "7ms", func(c Config) any { return c.SimITL }, 7 * time.Millisecond},
		{"sim-prompt-token-cost", "1ms", func(c Config) any { return c.SimPromptTokenCost }, time.Millisecond},
		{"heartbeat", "0s", func(c Config) any { return c.Heartbeat }, time.Duration(0)},
		{"max-queue", "3", func(c Config) any { return c.MaxQueue }, 3},
		{"queue-timeout", "9s", func(c Config) any { return c.QueueTimeout }, 9 * time.Second},
		{"token-timeout", "11s", func(c Config) any { return c.TokenTimeout }, 11 * time.Second},
		{"request-timeout", "12s", func(c Config) any { return c.RequestTimeout }, 12 * time.Second},
		{"max-pending-bytes", "2048", func(c Config) any { return c.MaxPendingBytes }, 2048},
		{"max-body-bytes", "4096", func(c Config) any { return c.MaxBodyBytes }, int64(4096)},
		{"drain-timeout", "2s", func(c Config) any { return c.DrainTimeout }, 2 * time.Second},
		{"keep-alive", "-1s", func(c Config) any { return c.KeepAlive }, -time.Second},
		{"preload", "sim, other", func(c Config) any { return c.Preload }, []string{"sim", "other"}},
		{"alias", "fast=sim,big=other", func(c Config) any { return c.Aliases }, map[string]string{"fast": "sim", "big": "other"}},
		{"max-embed-inputs", "16", func(c Config) any { return c.MaxEmbedInputs }, 16},
		{"max-audio-bytes", "1000", func(c Config) any { return c.MaxAudioBytes }, int64(1000)},
		{"max-audio-duration", "90s", func(c Config) any { return c.MaxAudioDuration }, 90 * time.Second},
		{"max-audio-decodes", "3", func(c Config) any { return c.MaxAudioDecodes }, 3},
		{"max-audio-memory", "1048576", func(c Config) any { return c.MaxAudioMemory }, int64(1 << 20)},
		{"audio-decoder", "none", func(c Config) any { return c.AudioDecoder }, "none"},
		{"max-images", "2", func(c Config) any { return c.MaxImages }, 2},
		{"max-image-bytes", "1024", func(c Config) any { return c.MaxImageBytes }, int64(1024)},
		{"max-image-pixels", "640000", func(c Config) any { return c.MaxImagePixels }, int64(640000)},
		{"allow-image-urls", "true", func(c Config) any { return c.AllowImageURLs }, true},
		{"image-url-allow", "10.9.0.0/16,fd00::/8", func(c Config) any { return c.ImageURLAllow }, []string{"10.9.0.0/16", "fd00::/8"}},
		{"max-model-bytes", "5000000000", func(c Config) any { return c.MaxModelBytes }, int64(5000000000)},
		{"max-image-memory", "1048576", func(c Config) any { return c.MaxImageMemory }, int64(1 << 20)},
		{"max-request-image-memory", "65536", func(c Config) any { return c.MaxRequestImageMemory }, int64(1 << 16)},
		{"upstream", "gpu=http://10.0.0.5:8000/v1;models=llama|qwen", func(c Config) any { return c.Upstreams }, []string{"gpu=http://10.0.0.5:8000/v1;models=llama|qwen"}},
		{"drain-delay", "5s", func(c Config) any { return c.DrainDelay }, 5 * time.Second},
		{"overflow-after", "20s", func(c Config) any { return c.OverflowAfter }, 20 * time.Second},
		{"max-loaded-models", "3", func(c Config) any { return c.MaxLoadedModels }, 3},
		{"hub-endpoint", "http://127.0.0.1:9", func(c Config) any { return c.HubEndpoint }, "http://127.0.0.1:9"},
		{"hub-token", "secret", func(c Config) any { return c.HubToken }, "secret"},
		{"npu-prefill-hint", "STATIC", func(c Config) any { return c.NPUPrefillHint }, "STATIC"},
		{"npu-generate-hint", "BEST_PERF", func(c Config) any { return c.NPUGenerateHint }, "BEST_PERF"},
		{"models-dir", "/srv/models", func(c Config) any { return c.ModelsDir }, "/srv/models"},
		{"device", "NPU", func(c Config) any { return c.Device }, "NPU"},
		{"npu-max-prompt-len", "2048", func(c Config) any { return c.NPUMaxPromptLen }, 2048},
		{"npu-min-response-len", "256", func(c Config) any { return c.NPUMinResponseLen }, 256},
		{"npu-prefill-chunk", "512", func(c Config) any { return c.NPUPrefillChunk }, 512},
		{"npu-prefix-caching", "false", func(c Config) any { return c.NPUPrefixCaching }, false},
		{"cache-dir", "/tmp/c", func(c Config) any { return c.CacheDir }, "/tmp/c"},
		{"log-level", "debug", func(c Config) any { return c.LogLevel }, slog.LevelDebug},
		{"log-format", "json", func(c Config) any { return c.LogFormat }, "json"},
		{"config", emptyConfig, func(c Config) any { return c.ConfigFile }, emptyConfig},
		{"api-key", "alice:k1-0123456789abcdef,ops:k2-0123456789abcdef:admin", func(c Config) any { return c.APIKeys },
			[]APIKey{{Name: "alice", Key: "k1-0123456789abcdef"}, {Name: "ops", Key: "k2-0123456789abcdef", Admin: true}}},
		{"api-key-file", keyFile, func(c Config) any { return c.APIKeyFile }, keyFile},
		{"public-paths", "/health", func(c Config) any { return c.PublicPaths }, []string{"/health"}},
		{"allowed-hosts", "npu.lan,box", func(c Config) any { return c.AllowedHosts }, []string{"npu.lan", "box"}},
		{"cors-origins", "https://app.example", func(c Config) any { return c.CORSOrigins }, []string{"https://app.example"}},
		{"resume-window", "2m", func(c Config) any { return c.ResumeWindow }, 2 * time.Minute},
		{"resume-max-bytes", "4096", func(c Config) any { return c.ResumeMaxBytes }, 4096},
		{"responses-max", "7", func(c Config) any { return c.ResponsesMax }, 7},
		{"responses-max-bytes", "65536", func(c Config) any { return c.ResponsesMaxBytes }, int64(65536)},
		{"responses-max-age", "2h", func(c Config) any { return c.ResponsesMaxAge }, 2 * time.Hour},
		{"responses-max-per-tenant", "3", func(c Config) any { return c.ResponsesMaxPerTenant }, 3},
		{"responses-max-bytes-per-tenant", "4096", func(c Config) any { return c.ResponsesMaxBytesPerTenant }, int64(4096)},
		{"sim-slots", "16", func(c Config) any { return c.SimSlots }, 16},
		{"ws-max-requests", "3", func(c Config) any { return c.WSMaxRequests }, 3},
		{"ws-max-messages", "50", func(c Config) any { return c.WSMaxMessages }, 50},
		{"rate-limit", "60", func(c Config) any { return c.RateLimit }, 60},
		{"rate-burst", "3", func(c Config) any { return c.RateBurst }, 3},
		{"affinity-max-overtakes", "2", func(c Config) any { return c.AffinityMaxOvertakes }, 2},
		{"affinity-max-wait", "5s", func(c Config) any { return c.AffinityMaxWait }, 5 * time.Second},
		{"affinity-linger", "100ms", func(c Config) any { return c.AffinityLinger }, 100 * time.Millisecond},
		{"auth-failure-limit", "5", func(c Config) any { return c.AuthFailureLimit }, 5},
		{"max-streams-per-key", "4", func(c Config) any { return c.MaxStreams }, 4},
		{"max-header-bytes", "8192", func(c Config) any { return c.MaxHeaderBytes }, 8192},
		{"header-timeout", "3s", func(c Config) any { return c.HeaderTimeout }, 3 * time.Second},
		{"body-read-timeout", "4s", func(c Config) any { return c.BodyReadTimeout }, 4 * time.Second},
		{"tls-cert", "/c.pem", func(c Config) any { return c.TLSCert }, "/c.pem"},
		{"tls-key", "/k.pem", func(c Config) any { return c.TLSKey }, "/k.pem"},
		{"no-auth", "true", func(c Config) any { return c.NoAuth }, true},
		{"metrics-public", "true", func(c Config) any { return c.MetricsPublic }, true},
	}
	var c Config
	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.flag] = true
	}
	for _, o := range c.options(&layers{}) {
		assert.True(t, covered[o.name], "--%s has no case here", o.name)
	}
	defaults, err := ParseServe(nil, env(), io.Discard)
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			if tc.flag != "engine" { // one value in this build
				require.NotEqual(t, tc.want, tc.get(defaults), "the case must differ from the default")
			}
			// TLS files only validate as a pair.
			partner := map[string][]string{"tls-cert": {"NPUD_TLS_KEY", "/k.pem"}, "tls-key": {"NPUD_TLS_CERT", "/c.pem"}}[tc.flag]
			fromEnv, err := ParseServe(nil, env(append([]string{EnvName(tc.flag), tc.value}, partner...)...), io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.get(fromEnv), "from %s", EnvName(tc.flag))

			fromFlag, err := ParseServe([]string{"--" + tc.flag + "=" + tc.value}, env(partner...), io.Discard) // = form: booleans take no separate value
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.get(fromFlag), "from --%s", tc.flag)
		})
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	tests := []struct {
		flag, envValue, flagValue string
		get                       func(Config) any
		want                      any
	}{
		{"max-queue", "9", "5", func(c Config) any { return c.MaxQueue }, 5},
		{"listen", "127.0.0.1:1", "127.0.0.1:2", func(c Config) any { return c.Listen }, "127.0.0.1:2"},
		{"heartbeat", "1s", "0s", func(c Config) any { return c.Heartbeat }, time.Duration(0)},
		{"max-body-bytes", "100", "200", func(c Config) any { return c.MaxBodyBytes }, int64(200)},
		{"log-level", "error", "debug", func(c Config) any { return c.LogLevel }, slog.LevelDebug},
		{"log-format", "json", "text", func(c Config) any { return c.LogFormat }, "text"},
		// A flag wins even over an environment value that would not validate.
		{"drain-timeout", "-1s", "1s", func(c Config) any { return c.DrainTimeout }, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			// Another variable set alongside still applies.
			cfg, err := ParseServe([]string{"--" + tc.flag, tc.flagValue},
				env(EnvName(tc.flag), tc.envValue, "NPUD_TOKEN_TIMEOUT", "7s"), io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.get(cfg), "the flag wins")
			assert.Equal(t, 7*time.Second, cfg.TokenTimeout, "the environment applies where no flag is given")
		})
	}
}

func TestParseServeErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    func(string) string
		errHas []string
	}{
		{"bad int env", nil, env("NPUD_MAX_QUEUE", "many"), []string{"NPUD_MAX_QUEUE", `"many"`}},
		{"bad duration env", nil, env("NPUD_HEARTBEAT", "often"), []string{"NPUD_HEARTBEAT", `"often"`}},
		{"bad int64 env", nil, env("NPUD_MAX_BODY_BYTES", "4MiB"), []string{"NPUD_MAX_BODY_BYTES"}},
		{"bad level env", nil, env("NPUD_LOG_LEVEL", "loud"), []string{"NPUD_LOG_LEVEL"}},
		{"bad flag value", []string{"--heartbeat", "soon"}, env(), []string{"heartbeat"}},
		{"unknown flag", []string{"--no-such-flag"}, env(), []string{"no-such-flag"}},
		{"negative duration", []string{"--token-timeout", "-1s"}, env(), []string{"--token-timeout must not be negative"}},
		{"negative duration from env", nil, env("NPUD_QUEUE_TIMEOUT", "-2s"), []string{"--queue-timeout must not be negative"}},
		{"unknown engine", []string{"--engine", "cuda"}, env(), []string{`--engine "cuda"`}},
		{"negative NPU length", []string{"--npu-max-prompt-len", "-1"}, env(), []string{"--npu-max-prompt-len"}},
		{"bad log format", []string{"--log-format", "xml"}, env(), []string{"--log-format", `"xml"`}},
		{"zero pending limit", []string{"--max-pending-bytes", "0"}, env(), []string{"--max-pending-bytes"}},
		{"positional arguments", []string{"--max-queue", "2", "extra", "more"}, env(), []string{"unexpected arguments: extra more"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseServe(tc.args, tc.env, io.Discard)
			require.Error(t, err)
			for _, s := range tc.errHas {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestParseServeHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := ParseServe([]string{"-h"}, env(), &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	var c Config
	for _, o := range c.options(&layers{}) {
		assert.Contains(t, out.String(), "-"+o.name)
		assert.Contains(t, out.String(), EnvName(o.name), "the help names the variable of --%s", o.name)
	}
}

func TestValidate(t *testing.T) {
	valid, err := ParseServe(nil, env(), io.Discard)
	require.NoError(t, err)
	tests := []struct {
		name   string
		mutate func(*Config)
		errHas string // empty: valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"zero queue is allowed", func(c *Config) { c.MaxQueue = 0 }, ""},
		{"zero durations are allowed", func(c *Config) { *c = zeroDurations(*c) }, ""},
		{"negative keep-alive means forever", func(c *Config) { c.KeepAlive = -time.Second }, ""},
		{"unknown engine", func(c *Config) { c.Engine = "cuda" }, `--engine "cuda"`},
		{"negative NPU response length", func(c *Config) { c.NPUMinResponseLen = -1 }, "--npu-min-response-len"},
		{"NPU chunk not a power of two", func(c *Config) { c.NPUPrefillChunk = 1000 }, "--npu-prefill-chunk"},
		{"negative queue", func(c *Config) { c.MaxQueue = -1 }, "--max-queue must be 0 or more, got -1"},
		{"zero pending bytes", func(c *Config) { c.MaxPendingBytes = 0 }, "--max-pending-bytes must be positive"},
		{"zero body bytes", func(c *Config) { c.MaxBodyBytes = 0 }, "--max-body-bytes must be positive"},
		{"bad log format", func(c *Config) { c.LogFormat = "yaml" }, `--log-format must be text or json, got "yaml"`},
		{"negative sim-ttft", func(c *Config) { c.SimTTFT = -1 }, "--sim-ttft must not be negative"},
		{"negative sim-itl", func(c *Config) { c.SimITL = -1 }, "--sim-itl must not be negative"},
		{"negative sim-prompt-token-cost", func(c *Config) { c.SimPromptTokenCost = -1 }, "--sim-prompt-token-cost must not be negative"},
		{"negative heartbeat", func(c *Config) { c.Heartbeat = -time.Second }, "--heartbeat must not be negative, got -1s"},
		{"negative queue-timeout", func(c *Config) { c.QueueTimeout = -1 }, "--queue-timeout must not be negative"},
		{"negative token-timeout", func(c *Config) { c.TokenTimeout = -1 }, "--token-timeout must not be negative"},
		{"negative request-timeout", func(c *Config) { c.RequestTimeout = -1 }, "--request-timeout must not be negative"},
		{"negative drain-timeout", func(c *Config) { c.DrainTimeout = -1 }, "--drain-timeout must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.mutate(&cfg)
			err := cfg.Validate()
			if tc.errHas == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errHas)
		})
	}

	t.Run("every problem is reported", func(t *testing.T) {
		cfg := valid
		cfg.Engine, cfg.MaxQueue, cfg.Heartbeat = "x", -1, -time.Second
		err := cfg.Validate()
		require.Error(t, err)
		assert.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 3, "%v", err)
	})
}

func zeroDurations(c Config) Config {
	c.SimTTFT, c.SimITL, c.SimPromptTokenCost = 0, 0, 0
	c.Heartbeat, c.QueueTimeout, c.TokenTimeout, c.RequestTimeout, c.DrainTimeout = 0, 0, 0, 0, 0
	return c
}

func TestRequestID(t *testing.T) {
	for _, good := range []string{"abc-123_x.y:z", "A", strings.Repeat("a", 128)} {
		assert.Equal(t, good, requestID(good))
	}
	for _, bad := range []string{"", "has space", "quote\"", strings.Repeat("a", 129), "ümlaut", "new\nline"} {
		id := requestID(bad)
		assert.NotEqual(t, bad, id)
		assert.Regexp(t, `^[0-9a-f]{24}$`, id)
	}
	assert.NotEqual(t, requestID(""), requestID(""), "generated ids differ")
}

func TestLogValueHidesTheHubToken(t *testing.T) {
	cfg, err := ParseServe([]string{"--hub-token", "s3cr3t-token"}, env(), io.Discard)
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "config", cfg)
	assert.NotContains(t, buf.String(), "s3cr3t-token")
	assert.Contains(t, buf.String(), "hub_token_set=true")
}
