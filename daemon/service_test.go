package daemon

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServiceConfig(t *testing.T) {
	tests := []struct {
		name, goos, exe string
		env             func(string) string
		wantArgs        []string
		wantExec        string
	}{
		{"linux", "linux", "/opt/npud/bin/npud", env(), []string{"serve", "--config", "/etc/npud/npud.toml",
			"--models-dir", "/var/lib/npud/models", "--cache-dir", "/var/cache/npud"},
			"ExecStart=/opt/npud/bin/npud serve --config /etc/npud/npud.toml"},
		{"path with a space", "linux", "/opt/my tools/npud", env(), nil, `ExecStart="/opt/my tools/npud" serve`},
		{"windows", "windows", `C:\Program Files\npud\npud.exe`, env("ProgramData", `D:\PD`), []string{"serve",
			"--config", `D:\PD\npud\npud.toml`, "--models-dir", `D:\PD\npud\models`, "--cache-dir", `D:\PD\npud\cache`}, ""},
		{"windows default ProgramData", "windows", `C:\npud.exe`, env(), []string{"serve",
			"--config", `C:\ProgramData\npud\npud.toml`, "--models-dir", `C:\ProgramData\npud\models`, "--cache-dir", `C:\ProgramData\npud\cache`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := serviceConfig(tc.exe, defaultServicePaths(tc.goos, tc.env))
			assert.Equal(t, "npud", c.Name)
			if tc.wantArgs != nil {
				assert.Equal(t, tc.wantArgs, c.Arguments)
			}
			unit, ok := c.Option["SystemdScript"].(string)
			require.True(t, ok)
			if tc.wantExec != "" {
				assert.Contains(t, unit, tc.wantExec)
			}
			assert.NotContains(t, unit, "/usr/bin/npud", "the real executable replaces the packaged path")
			assert.Contains(t, unit, "Type=notify", "the hardened unit, not kardianos's default")
			assert.Equal(t, "restart", c.Option["OnFailure"], "Windows restarts a failed service")
			assert.Equal(t, "automatic", c.Option["StartType"])
		})
	}
}

func TestServiceCommandsAreWired(t *testing.T) {
	// status only reads; it must answer in LSB style whatever this machine
	// runs (here PID 1 is not systemd, so npud is never installed).
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"status"}, env(), &out, &errOut)
	assert.Contains(t, []int{0, 3, 4}, code, "%s%s", out.String(), errOut.String())
	assert.True(t, strings.HasPrefix(out.String()+errOut.String(), "npud"), "%q", out.String()+errOut.String())

	out.Reset()
	Main(t.Context(), []string{"help"}, env(), &out, &errOut)
	for _, cmd := range []string{"install", "uninstall", "status", "config check"} {
		assert.Contains(t, out.String(), cmd)
	}
}
