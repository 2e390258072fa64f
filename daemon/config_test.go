package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
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
	assert.Equal(t, "127.0.0.1:11434", cfg.Listen, "Ollama's address, so Ollama tools work untouched")
	assert.Equal(t, "sim", cfg.Engine)
	assert.Equal(t, 15*time.Second, cfg.Heartbeat)
	assert.Equal(t, 64, cfg.MaxQueue)
	assert.Equal(t, 180*time.Second, cfg.TokenTimeout)
	assert.Equal(t, 1<<20, cfg.MaxPendingBytes)
	assert.Equal(t, int64(4<<20), cfg.MaxBodyBytes)
	assert.Equal(t, 30*time.Second, cfg.DrainTimeout)
	assert.Zero(t, cfg.RequestTimeout)
	assert.Equal(t, slog.LevelInfo, cfg.LogLevel)
}

func TestEveryFlagHasAnEnvironmentVariable(t *testing.T) {
	tests := []struct {
		flag, value string
		get         func(Config) any
		want        any
	}{
		{"listen", "127.0.0.1:9999", func(c Config) any { return c.Listen }, "127.0.0.1:9999"},
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
		{"models-dir", "/srv/models", func(c Config) any { return c.ModelsDir }, "/srv/models"},
		{"device", "NPU", func(c Config) any { return c.Device }, "NPU"},
		{"npu-max-prompt-len", "2048", func(c Config) any { return c.NPUMaxPromptLen }, 2048},
		{"npu-min-response-len", "256", func(c Config) any { return c.NPUMinResponseLen }, 256},
		{"cache-dir", "/tmp/c", func(c Config) any { return c.CacheDir }, "/tmp/c"},
		{"log-level", "debug", func(c Config) any { return c.LogLevel }, slog.LevelDebug},
		{"log-format", "json", func(c Config) any { return c.LogFormat }, "json"},
	}
	var c Config
	require.Len(t, tests, len(c.options())-1, "every option but --engine (one value in this build) is covered")
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			fromEnv, err := ParseServe(nil, env(EnvName(tc.flag), tc.value), io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.get(fromEnv), "from %s", EnvName(tc.flag))

			fromFlag, err := ParseServe([]string{"--" + tc.flag, tc.value}, env(), io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, tc.get(fromFlag), "from --%s", tc.flag)
		})
	}
	assert.Equal(t, "NPUD_MAX_QUEUE", EnvName("max-queue"))
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	cfg, err := ParseServe([]string{"--max-queue", "5"}, env("NPUD_MAX_QUEUE", "9", "NPUD_HEARTBEAT", "1s"), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 5, cfg.MaxQueue, "the flag wins")
	assert.Equal(t, time.Second, cfg.Heartbeat, "the environment still applies where no flag is given")
}

func TestParseServeErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    func(string) string
		errHas string
	}{
		{"bad env value", nil, env("NPUD_MAX_QUEUE", "many"), "NPUD_MAX_QUEUE"},
		{"bad flag value", []string{"--heartbeat", "soon"}, env(), "heartbeat"},
		{"negative duration", []string{"--token-timeout", "-1s"}, env(), "--token-timeout must not be negative"},
		{"unknown engine", []string{"--engine", "cuda"}, env(), `--engine "cuda"`},
		{"bad log format", []string{"--log-format", "xml"}, env(), "--log-format"},
		{"zero pending limit", []string{"--max-pending-bytes", "0"}, env(), "--max-pending-bytes"},
		{"positional arguments", []string{"extra"}, env(), "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseServe(tc.args, tc.env, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errHas)
		})
	}
}

func TestMainCommands(t *testing.T) {
	tests := []struct {
		args      []string
		code      int
		stdoutHas string
		stderrHas string
	}{
		{[]string{"version"}, 0, "npud " + Version, ""},
		{nil, 2, "", "Usage"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"help"}, 0, "Usage", ""},
		{[]string{"serve", "-h"}, 0, "", "NPUD_MAX_QUEUE"},
		{[]string{"serve", "--max-queue", "x"}, 2, "", "max-queue"},
		{[]string{"serve", "--listen", "256.0.0.1:1"}, 1, "", "cannot start"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, env(), &stdout, &stderr)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			assert.Contains(t, stdout.String(), tc.stdoutHas)
			assert.Contains(t, stderr.String(), tc.stderrHas)
		})
	}
}

func TestRequestID(t *testing.T) {
	assert.Equal(t, "abc-123_x.y:z", requestID("abc-123_x.y:z"))
	for _, bad := range []string{"", "has space", "quote\"", strings.Repeat("a", 129), "ümlaut"} {
		id := requestID(bad)
		assert.NotEqual(t, bad, id)
		assert.Len(t, id, 24)
	}
	assert.NotEqual(t, requestID(""), requestID(""), "generated ids differ")
}
