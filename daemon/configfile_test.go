package daemon

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "npud.toml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestConfigFileSetsEverySource(t *testing.T) {
	path := writeConfig(t, `
listen = "127.0.0.1:1234"
max-queue = 7
heartbeat = "3s"
preload = ["a", "b"]
api-key = ["alice:k1-0123456789abcdef", "ops:k2-0123456789abcdef:admin"]
rate-limit = 120

[alias]
fast = "sim"
`)
	cfg, err := ParseServe([]string{"--config", path}, env(), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:1234", cfg.Listen)
	assert.Equal(t, 7, cfg.MaxQueue)
	assert.Equal(t, 3*time.Second, cfg.Heartbeat)
	assert.Equal(t, []string{"a", "b"}, cfg.Preload)
	assert.Equal(t, map[string]string{"fast": "sim"}, cfg.Aliases)
	assert.Equal(t, []APIKey{{Name: "alice", Key: "k1-0123456789abcdef"}, {Name: "ops", Key: "k2-0123456789abcdef", Admin: true}}, cfg.APIKeys)
	assert.Equal(t, 120, cfg.RateLimit)
	assert.Equal(t, path, cfg.ConfigFile)
}

func TestConfigPrecedenceFlagsOverEnvironmentOverFile(t *testing.T) {
	path := writeConfig(t, `
max-queue = 1
heartbeat = "1s"
token-timeout = "1s"
preload = ["from-file"]
api-key = ["file:kf-0123456789abcdef"]
`)
	tests := []struct {
		name string
		args []string
		env  []string
		want func(t *testing.T, c Config)
	}{
		{"file only", []string{"--config", path}, nil, func(t *testing.T, c Config) {
			assert.Equal(t, 1, c.MaxQueue)
			assert.Equal(t, []string{"from-file"}, c.Preload)
		}},
		{"environment over file", nil, []string{"NPUD_CONFIG", path, "NPUD_MAX_QUEUE", "2", "NPUD_PRELOAD", "e1,e2", "NPUD_API_KEYS", "env:ke-0123456789abcdef"}, func(t *testing.T, c Config) {
			assert.Equal(t, 2, c.MaxQueue)
			assert.Equal(t, time.Second, c.Heartbeat, "the file still applies where the environment is silent")
			assert.Equal(t, []string{"e1", "e2"}, c.Preload, "a list from the environment replaces the file's")
			assert.Equal(t, []APIKey{{Name: "env", Key: "ke-0123456789abcdef"}}, c.APIKeys)
		}},
		{"flags over both", []string{"--config", path, "--max-queue", "3", "--preload", "f", "--api-key", "a:1-0123456789abcdef", "--api-key", "b:2-0123456789abcdef"},
			[]string{"NPUD_MAX_QUEUE", "2", "NPUD_HEARTBEAT", "2s", "NPUD_PRELOAD", "e"}, func(t *testing.T, c Config) {
				assert.Equal(t, 3, c.MaxQueue)
				assert.Equal(t, 2*time.Second, c.Heartbeat)
				assert.Equal(t, time.Second, c.TokenTimeout)
				assert.Equal(t, []string{"f"}, c.Preload)
				assert.Equal(t, []APIKey{{Name: "a", Key: "1-0123456789abcdef"}, {Name: "b", Key: "2-0123456789abcdef"}}, c.APIKeys, "repeated flags add up")
			}},
		{"--config flag over NPUD_CONFIG", []string{"--config=" + path}, []string{"NPUD_CONFIG", "/nonexistent.toml"}, func(t *testing.T, c Config) {
			assert.Equal(t, path, c.ConfigFile)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseServe(tc.args, env(tc.env...), io.Discard)
			require.NoError(t, err)
			tc.want(t, cfg)
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, text string
		errHas     []string
	}{
		{"syntax", "listen = \n", []string{"npud.toml:1:"}},
		{"unknown key", "lisen = \"x\"\n", []string{`unknown key "lisen"`}},
		{"config inside config", "config = \"other.toml\"\n", []string{`unknown key "config"`}},
		{"bad value", "max-queue = \"many\"\n", []string{"max-queue", `"many"`}},
		{"bad duration", "heartbeat = 5\n", []string{"heartbeat"}},
		{"invalid after parsing", "max-queue = -1\n", []string{"--max-queue must be 0 or more"}},
		{"bad key", "api-key = [\"nocolon\"]\n", []string{"api-key", "NAME:KEY"}},
		{"secret not echoed", "api-key = [\"a:s3cret-0123456789abcdef:root\"]\n", []string{"only role is admin"}},
		{"duplicate key name", "api-key = [\"a:1-0123456789abcdef\", \"a:2-0123456789abcdef\"]\n", []string{`name "a" is used twice`}},
		{"bad table", "[alias]\nx = 1\n", []string{"alias", "must be a string"}},
		{"tls half", "tls-cert = \"/c.pem\"\n", []string{"--tls-cert and --tls-key go together"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseServe([]string{"--config", writeConfig(t, tc.text)}, env(), io.Discard)
			require.Error(t, err)
			for _, s := range tc.errHas {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
	_, err := ParseServe([]string{"--config", "/nonexistent/npud.toml"}, env(), io.Discard)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestAPIKeyFile(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(keys, []byte("# ops team\nops:k-ops-0123456789abcdef:admin\n\n  carol:k-carol-0123456789abcdef  \n"), 0o600))
	cfg, err := ParseServe([]string{"--api-key", "alice:k-alice-0123456789abcdef", "--api-key-file", keys}, env(), io.Discard)
	require.NoError(t, err)
	all, err := cfg.Keys()
	require.NoError(t, err)
	assert.Equal(t, []APIKey{{Name: "alice", Key: "k-alice-0123456789abcdef"}, {Name: "ops", Key: "k-ops-0123456789abcdef", Admin: true}, {Name: "carol", Key: "k-carol-0123456789abcdef"}}, all)

	require.NoError(t, os.WriteFile(keys, []byte("dave:k-alice-0123456789abcdef\n"), 0o600))
	_, err = ParseServe([]string{"--api-key", "alice:k-alice-0123456789abcdef", "--api-key-file", keys}, env(), io.Discard)
	require.ErrorContains(t, err, "reuses another key's secret")
	require.NoError(t, os.WriteFile(keys, []byte("dave\n"), 0o600))
	_, err = ParseServe([]string{"--api-key-file", keys}, env(), io.Discard)
	require.ErrorContains(t, err, keys+":1")
}

// The packaged configuration file documents every key and parses as is,
// and with every line uncommented gives the defaults.
func TestPackagedConfigFileListsEveryKey(t *testing.T) {
	raw, err := os.ReadFile("../packaging/npud.toml")
	require.NoError(t, err)
	text := string(raw)
	var c Config
	for _, o := range c.options(&layers{}) {
		if o.name == "config" {
			continue
		}
		assert.Contains(t, text, "\n# "+o.name+" = ", "packaging/npud.toml documents %s", o.name)
	}
	defaults, err := ParseServe([]string{"--config", "../packaging/npud.toml"}, env(), io.Discard)
	require.NoError(t, err)
	var uncommented []string
	for _, line := range strings.Split(text, "\n") {
		if k, _, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = "); ok && strings.HasPrefix(line, "# ") && !strings.Contains(k, " ") {
			uncommented = append(uncommented, strings.TrimPrefix(line, "# "))
		}
	}
	all, err := ParseServe([]string{"--config", writeConfig(t, strings.Join(uncommented, "\n"))}, env(), io.Discard)
	require.NoError(t, err)
	all.ConfigFile = defaults.ConfigFile
	assert.NotEmpty(t, all.NPUOperatorSet, "the npu-* keys written are the operator's")
	all.NPUOperatorSet = nil // which keys were written, not a value
	assert.Equal(t, defaults, all, "the values shown are the defaults")
}
