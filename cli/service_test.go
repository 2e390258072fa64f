package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/packaging"
	"github.com/npud/npud/systemd"
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
	code := Main(t.Context(), []string{"service", "status"}, env(), &out, &errOut)
	assert.Contains(t, []int{0, 3, 4}, code, "%s%s", out.String(), errOut.String())
	assert.True(t, strings.HasPrefix(out.String()+errOut.String(), "npud"), "%q", out.String()+errOut.String())

	out.Reset()
	Main(t.Context(), []string{"help"}, env(), &out, &errOut)
	for _, cmd := range []string{"install", "uninstall", "status", "config check"} {
		assert.Contains(t, out.String(), cmd)
	}
}

// Issue 12, item 14: asking for help, or passing an argument, never acts on
// the service; the service verbs live under `npud service` so that an
// Ollama habit such as `npud stop MODEL` cannot stop the service.
func TestServiceCommandsNeverSurprise(t *testing.T) {
	// Should anything reach the service manager, it finds no tool to run
	// (and the exit code is 1, not the usage error's 2).
	t.Setenv("PATH", t.TempDir())
	tests := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"install", "--help"}, 2, "npud service install"},
		{[]string{"uninstall", "--help"}, 2, "npud service uninstall"},
		// `npud stop MODEL` is the Ollama habit: it unloads a model of the
		// running daemon, never the service.
		{[]string{"stop", "--host=127.0.0.1:9", "sim"}, 1, "no npud answers"},
		{[]string{"stop"}, 2, "usage: npud stop"},
		{[]string{"start"}, 2, "npud service start"},
		{[]string{"status"}, 2, "npud service status"},
		{[]string{"service"}, 2, "usage: npud service"},
		{[]string{"service", "--help"}, 0, "usage: npud service"},
		{[]string{"service", "install", "--help"}, 0, "usage: npud service"},
		{[]string{"service", "uninstall", "-h"}, 0, "usage: npud service"},
		{[]string{"service", "stop", "sim"}, 2, "takes no arguments"},
		{[]string{"service", "install", "--force"}, 2, "flag provided but not defined: -force"},
		{[]string{"service", "status", "--print"}, 2, "flag provided but not defined: -print"},
		{[]string{"service", "reinstall"}, 2, "unknown action"},
		{[]string{"version", "extra"}, 2, "takes no arguments"},
		{[]string{"devices", "extra"}, 2, "takes no arguments"},
		{[]string{"devices", "--help"}, 0, "usage: npud devices"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(t.Context(), tc.args, env(), &out, &errOut)
			assert.Equal(t, tc.code, code, "%s%s", out.String(), errOut.String())
			assert.Contains(t, out.String()+errOut.String(), tc.says)
			assert.NotContains(t, out.String()+errOut.String(), "done (", "nothing was done")
		})
	}
}

// Issue 12, item 15: install pointed the unit at /etc/npud/npud.toml
// without creating it, so the service could not start. Install writes the
// packaged default where none exists and never touches an operator's. The
// test runs in a throwaway root, never on the host.
func TestInstallWritesTheDefaultConfigurationOnce(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			root := t.TempDir()
			paths := servicePaths{config: "/etc/npud/npud.toml", models: "/var/lib/npud/models", cache: "/var/cache/npud"}
			wrote, err := installServiceFiles(root, goos, paths)
			require.NoError(t, err)
			assert.Equal(t, []string{paths.config}, wrote)
			config := filepath.Join(root, paths.config)
			got, err := os.ReadFile(config)
			require.NoError(t, err)
			assert.Equal(t, packaging.DefaultConfig(), string(got))
			st, err := os.Stat(config)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "as the packages install it")

			// What was written parses: the service can start with it.
			_, err = daemon.ParseServe([]string{"--config", config}, env(), io.Discard)
			require.NoError(t, err)

			require.NoError(t, os.WriteFile(config, []byte("listen = \"0.0.0.0:11434\"\n"), 0o600))
			wrote, err = installServiceFiles(root, goos, paths)
			require.NoError(t, err)
			assert.Empty(t, wrote)
			got, err = os.ReadFile(config)
			require.NoError(t, err)
			assert.Equal(t, "listen = \"0.0.0.0:11434\"\n", string(got), "the operator's configuration is kept")

			_, err = os.Stat(filepath.Join(root, paths.models))
			assert.Equal(t, goos == "windows", err == nil, "Windows gets its folders made; systemd makes them on Linux")
		})
	}
}

// Issue 12, item 15: uninstalling on SysV left /etc/rc?.d links behind.
// Only the links to npud's own init script go.
func TestUninstallRemovesTheSysVLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc", "init.d"), 0o755))
	var ours, theirs []string
	for _, rc := range []string{"0", "1", "2", "3", "4", "5", "6"} {
		dir := filepath.Join(root, "etc", "rc"+rc+".d")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		name := "S50npud"
		if rc == "0" || rc == "1" || rc == "6" {
			name = "K02npud"
		}
		target := "/etc/init.d/npud" // as kardianos links them
		if rc == "5" {
			target = "../init.d/npud" // as update-rc.d links them
		}
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
		ours = append(ours, "/etc/rc"+rc+".d/"+name)
		require.NoError(t, os.Symlink("/etc/init.d/cron", filepath.Join(dir, "S01cron")))
		require.NoError(t, os.Symlink("/etc/init.d/other", filepath.Join(dir, "S50npudx")))
		theirs = append(theirs, filepath.Join(dir, "S01cron"), filepath.Join(dir, "S50npudx"))
	}
	removed, err := removeSysVLinks(root, "npud")
	require.NoError(t, err)
	assert.ElementsMatch(t, ours, removed)
	for _, l := range ours {
		_, err := os.Lstat(filepath.Join(root, l))
		assert.True(t, os.IsNotExist(err), l)
	}
	for _, l := range theirs {
		_, err := os.Lstat(l)
		assert.NoError(t, err, "someone else's link stays: %s", l)
	}
}

// Issue 27: `npud service install` wrote the running binary's path into
// ExecStart, and the unit's sandbox hides /home, /root and /tmp from the
// service, so a binary built or unpacked there never started. The install
// now refuses it, saying how to put the binary where the service can run it.
func TestServiceInstallRefusesABinaryTheUnitHides(t *testing.T) {
	unit := systemd.ServiceUnit()
	for exe, hiddenBy := range map[string]string{
		"/home/ana/npud/npud":      "ProtectHome=yes",
		"/root/go/bin/npud":        "ProtectHome=yes",
		"/run/user/1000/npud":      "ProtectHome=yes",
		"/tmp/npud":                "PrivateTmp=yes",
		"/var/tmp/build/npud":      "PrivateTmp=yes",
		"/usr/bin/npud":            "",
		"/usr/local/bin/npud":      "",
		"/opt/npud/npud":           "",
		"/homestead/npud":          "",
		"/tmpfs-is-not-tmp/npud":   "",
		"/var/lib/tmp/bin/npud":    "",
		"/srv/home/npud/bin/npud":  "",
		"/usr/local/bin/tmp-npud":  "",
		"/usr/local/root/bin/npud": "",
	} {
		err := unitCanRun(unit, exe)
		if hiddenBy == "" {
			assert.NoError(t, err, exe)
			continue
		}
		require.Error(t, err, exe)
		assert.Contains(t, err.Error(), hiddenBy, exe)
		assert.Contains(t, err.Error(), "sudo install -m 0755 "+exe+" /usr/local/bin/npud", exe)
	}
	// What the unit says decides: without the directive nothing is hidden.
	assert.NoError(t, unitCanRun("[Service]\nProtectHome=read-only\nPrivateTmp=no\n", "/home/ana/npud"))
	assert.NoError(t, unitCanRun("[Service]\nPrivateTmp=no\n", "/tmp/npud"))
}

// Issue 35: `npud service status` where PID 1 is not systemd printed the
// init script's "exit status 1"; it says npud is not installed, and why.
func TestServiceStatusWithoutSystemd(t *testing.T) {
	root := t.TempDir()
	assert.Contains(t, noServiceManager("linux", root), "no systemd")
	assert.Empty(t, noServiceManager("windows", root))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc", "init.d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "init.d", "npud"), nil, 0o755))
	assert.Empty(t, noServiceManager("linux", root), "a System V service answers for itself")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run", "systemd", "system"), 0o755))
	assert.Empty(t, noServiceManager("linux", root))

	// This machine, when PID 1 is not systemd: the whole command.
	if noServiceManager(runtime.GOOS, string(filepath.Separator)) == "" {
		t.Skip("a service manager runs here")
	}
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"service", "status"}, env(), &out, &errOut)
	assert.Equal(t, 4, code)
	assert.Equal(t, "npud: not installed (no systemd: PID 1 is not systemd here (a container?), so there is no service; run npud serve directly)\n", out.String())
	assert.Empty(t, errOut.String())
}

// Issue 35: `npud service install` had no way to show the unit it would
// write; --print shows it, for this executable, and changes nothing.
func TestServiceInstallPrint(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the systemd unit")
	}
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"service", "install", "--print"}, env(), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out.String(), "# /etc/systemd/system/npud.service, as npud service install writes it"), out.String())
	assert.Contains(t, out.String(), "\n[Service]\n")
	assert.Contains(t, out.String(), "ExecStart="+exe+" serve --config /etc/npud/npud.toml")
	assert.NotContains(t, out.String(), "done (", "nothing was installed")
	if strings.HasPrefix(exe, "/tmp/") {
		assert.Contains(t, errOut.String(), "PrivateTmp", "and why install would refuse this executable")
	}
}
