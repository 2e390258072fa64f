package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/hub/hubtest"
)

// Issue 35: flags after the positional arguments were part of the prompt
// (`npud run sim "Say hello" --verbose`) or a bare usage with exit 2
// (`npud show sim --host H`). Every command parses by one rule: flags
// anywhere, "--" ends them, and a bad flag is named.
func TestFlagsAnywhereInEveryCommand(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	audio := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(audio, []byte("RIFF"), 0o600))
	hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	models := t.TempDir()

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // what shows the flag was taken
		stderr string
	}{
		{"list", []string{"list", "--host", srv.URL}, 0, "NAME", ""},
		{"ls", []string{"ls", "--host", srv.URL}, 0, "NAME", ""},
		{"ps", []string{"ps", "--host", srv.URL}, 0, "NAME", ""},
		{"show", []string{"show", "sim", "--host", srv.URL}, 0, "architecture", ""},
		{"run", []string{"run", "sim", "Say hello", "--verbose", "--host", srv.URL}, 0, "", "eval rate:"},
		{"run, flags between", []string{"run", "sim", "--host=" + srv.URL, "Say", "--verbose", "hello"}, 0, "", "eval rate:"},
		{"stop", []string{"stop", "sim", "--host", srv.URL}, 0, "", ""},
		{"cp", []string{"cp", "sim", "copy", "--host", srv.URL}, 1, "", "fixed set of models"},
		{"rm", []string{"rm", "nothing", "--host", srv.URL}, 1, "", `"nothing"`},
		{"pull", []string{"pull", "a/b", "--host", srv.URL}, 1, "", "npud pull: "},
		{"pull --local", []string{"pull", "OpenVINO/tiny-ov", "--local", "--models-dir", models, "--hub-endpoint", hubSrv.URL}, 0, `success: model "tiny-ov"`, ""},
		{"transcribe", []string{"transcribe", audio, "--host", srv.URL, "--format", "json"}, 1, "", "npud transcribe: "},
		{"launch", []string{"launch", "claude", "--print", "--host", srv.URL, "--model", "sim"}, 0, "ANTHROPIC_BASE_URL=" + srv.URL, ""},
		{"bench", []string{"bench", "--json", "--url", srv.URL, "--requests", "1", "--concurrency", "1", "--max-tokens", "2"}, 0, `"requests"`, ""},
		{"bench embeddings, one pass", []string{"bench", "--endpoint", "embeddings", "--json", "--url", srv.URL, "--inputs", "5", "--batch", "2"}, 0, `"inputs": 5,`, ""},
		{"config check", []string{"config", "check", "--listen", "127.0.0.1:7", "--engine", "sim"}, 0, `listen = "127.0.0.1:7"`, ""},
		{"doctor", []string{"doctor", "--engine", "sim", "--json"}, 1, `"ready": false`, ""},

		{"-- ends the flags", []string{"run", "sim", "--host", srv.URL, "--", "--verbose"}, 0, "", ""},
		{"unknown flag after the model", []string{"show", "sim", "--bogus", "--host", srv.URL}, 2, "", "flag provided but not defined: -bogus"},
		{"unknown flag in run", []string{"run", "sim", "hi", "--nope"}, 2, "", "-nope"},
		{"unknown flag in bench", []string{"bench", "--nope"}, 2, "", "-nope"},
		{"unknown flag in serve", []string{"serve", "--nope"}, 2, "", "-nope"},
		{"unknown flag in pull --local", []string{"pull", "--local", "x/y", "--nope"}, 2, "", "-nope"},
		{"unknown flag in config check", []string{"config", "check", "--nope"}, 1, "", "-nope"},
		{"a flag's value that looks like a flag", []string{"run", "--host", srv.URL, "sim", "hi", "--think", "--verbose"}, 0, "Thinking...", "eval rate:"},
		{"too many arguments named", []string{"show", "sim", "extra", "--host", srv.URL}, 2, "", `takes MODEL, got 2 argument(s): "sim" "extra"`},
		{"a flag needing a value", []string{"show", "sim", "--host"}, 2, "", "flag needs an argument: -host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := npud(t, "", tc.args...)
			assert.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", out, errOut)
			assert.Contains(t, out, tc.stdout)
			assert.Contains(t, errOut, tc.stderr)
			if code == 2 {
				assert.False(t, strings.HasPrefix(errOut, "usage:"), "what was wrong comes first, not the usage: %s", errOut)
			}
		})
	}

	// What follows "--" is the prompt, however it looks: no timings.
	code, _, errOut := npud(t, "", "run", "sim", "--host", srv.URL, "--", "--verbose")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "eval rate:")
}
