package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
)

func env(pairs ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "npud.toml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

type mainCase struct {
	name       string
	args       []string
	code       int
	stdout     string // exact
	stderrHas  []string
	stderrNone bool
}

func TestMainCommands(t *testing.T) {
	tests := []mainCase{
		{"version", []string{"version"}, 0, "npud " + daemon.Version + "\n", nil, true},
		{"--version", []string{"--version"}, 0, "npud " + daemon.Version + "\n", nil, true},
		{"no command", nil, 2, "", []string{"Usage:", "npud serve", "npud version"}, false},
		{"unknown command", []string{"frobnicate"}, 2, "", []string{`unknown command "frobnicate"`, "Usage:"}, false},
		{"help", []string{"help"}, 0, usage, nil, true},
		{"serve -h", []string{"serve", "-h"}, 0, "", []string{"-max-queue", "NPUD_MAX_QUEUE"}, false},
		{"serve --help", []string{"serve", "--help"}, 0, "", []string{"-drain-timeout"}, false},
		{"serve bad flag value", []string{"serve", "--max-queue", "x"}, 2, "", []string{"max-queue"}, false},
		{"serve unknown flag", []string{"serve", "--frob"}, 2, "", []string{"flag provided but not defined: -frob"}, false},
		{"serve invalid value", []string{"serve", "--log-format", "xml"}, 2, "", []string{"npud serve:", "--log-format"}, false},
		{"serve extra argument", []string{"serve", "now"}, 2, "", []string{"unexpected arguments: now"}, false},
		{"serve cannot listen", []string{"serve", "--listen", "256.0.0.1:1"}, 1, "", []string{"cannot start", "256.0.0.1:1"}, false},
	}
	if !daemon.OpenVINOBuilt {
		tests = append(tests, mainCase{"devices without openvino", []string{"devices"}, 1, "", []string{"npud devices:", "without the OpenVINO"}, false})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, env(), &stdout, &stderr)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			assert.Equal(t, tc.stdout, stdout.String())
			for _, s := range tc.stderrHas {
				assert.Contains(t, stderr.String(), s)
			}
			if tc.stderrNone {
				assert.Empty(t, stderr.String())
			}
		})
	}
}

// TestMainServeUsesTheEnvironment runs `npud serve` in-process with its
// configuration from the environment only: a JSON log on stderr that
// reports the address and settings, and exit 0 once ctx ends.
func TestMainServeUsesTheEnvironment(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a signal that came before the server was up: it still starts and drains
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"serve"}, env("NPUD_LISTEN", "127.0.0.1:0", "NPUD_LOG_FORMAT", "json",
		"NPUD_MAX_QUEUE", "7", "NPUD_LOG_LEVEL", "debug"), &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Empty(t, stdout.String())
	var listening, configuration map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every log line is JSON: %s", line)
		switch m["msg"] {
		case "npud listening":
			listening = m
		case "configuration":
			configuration = m
		}
	}
	require.NotNil(t, listening, "stderr: %s", stderr.String())
	assert.Regexp(t, `^127\.0\.0\.1:[1-9][0-9]*$`, listening["addr"])
	// Issue 17: the start-up line says what a person checks first, not
	// every setting; those come at debug level.
	assert.Equal(t, "off", listening["auth"])
	assert.Equal(t, []any{"sim"}, listening["models"])
	assert.Equal(t, []any{"simulated"}, listening["devices"])
	assert.NotContains(t, listening, "config")
	require.NotNil(t, configuration, "the whole configuration at debug level")
	assert.Equal(t, float64(7), configuration["config"].(map[string]any)["max_queue"])
	assert.Contains(t, stderr.String(), `"msg":"stopped"`)
}

func TestConfigCheckCommand(t *testing.T) {
	path := writeConfig(t, "max-queue = 5\napi-key = [\"alice:topsecret-0123456789abcdef\", \"ops:alsosecret-0123456789abcdef:admin\"]\nhub-token = \"hf_secret\"\n")
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"config", "check", "--config", path, "--heartbeat", "2s"}, env("NPUD_LISTEN", "127.0.0.1:9"), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	text := out.String()
	assert.Contains(t, text, "max-queue = 5\n")
	assert.Contains(t, text, "heartbeat = \"2s\"\n")
	assert.Contains(t, text, "listen = \"127.0.0.1:9\"\n")
	assert.Contains(t, text, `api-key = ["alice:****", "ops:****:admin"]`)
	assert.Contains(t, text, `hub-token = "****"`)
	for _, secret := range []string{"topsecret", "alsosecret", "hf_secret"} {
		assert.NotContains(t, text, secret)
	}
	// The output is itself a valid configuration file.
	again := writeConfig(t, text)
	_, err := daemon.ParseServe([]string{"--config", again, "--api-key", "x:y-0123456789abcdef", "--hub-token", "t"}, env(), io.Discard)
	require.NoError(t, err)

	out.Reset()
	errOut.Reset()
	bad := writeConfig(t, "max-queue = -3\nlog-format = \"xml\"\n")
	code = Main(t.Context(), []string{"config", "check", "--config", bad}, env(), &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "--max-queue")
	assert.Contains(t, errOut.String(), "--log-format")
	assert.Equal(t, 2, Main(t.Context(), []string{"config"}, env(), &out, &errOut))
}
