package daemon

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 35: `npud config check` printed booleans as strings (a file made
// from it then set them from strings), and a value that did not parse
// only as "parse error", from a flag, the environment or the file.
func TestConfigCheckPrintsBooleansAndSaysWhatAValueTakes(t *testing.T) {
	var out strings.Builder
	require.NoError(t, CheckConfig([]string{"--metrics-public"}, func(string) string { return "" }, &out, io.Discard))
	assert.Contains(t, out.String(), "\nmetrics-public = true\n")
	assert.Contains(t, out.String(), "\nnpu-prefix-caching = true\n")
	assert.Contains(t, out.String(), "\nno-auth = false\n")
	assert.Contains(t, out.String(), "\nlisten = \"127.0.0.1:11434\"\n", "strings stay quoted")

	file := filepath.Join(t.TempDir(), "npud.toml")
	require.NoError(t, os.WriteFile(file, []byte("max-queue = \"lots\"\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"a flag's boolean", []string{"--npu-prefix-caching=maybe"}, nil, `-npu-prefix-caching: want true or false`},
		{"a flag's number", []string{"--max-queue", "many"}, nil, `-max-queue: want a whole number`},
		{"a flag's duration", []string{"--drain-timeout", "5"}, nil, `-drain-timeout: want a duration such as 90s, 5m or 1h30m`},
		{"the environment's number", nil, map[string]string{"NPUD_MAX_QUEUE": "abc"}, `NPUD_MAX_QUEUE="abc": want a whole number`},
		{"the environment's boolean", nil, map[string]string{"NPUD_NO_AUTH": "yes please"}, `NPUD_NO_AUTH="yes please": want true or false`},
		{"the file's number", []string{"--config", file}, nil, `max-queue = "lots": want a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// A boolean flag still stands alone.
	cfg, err := ParseServe([]string{"--no-auth", "--metrics-public"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.NoAuth)
	assert.True(t, cfg.MetricsPublic)
}
