// Package packaging checks the .deb and .rpm that build.sh makes: their
// contents, lintian, and the maintainer scripts outside systemd.
package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// need returns the path of tool; missing, it skips locally and fails in CI,
// where make test installs it.
func need(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (make test installs it)", tool)
		}
		t.Skipf("%s is missing; make test installs it", tool)
	}
	return path
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// buildPackages builds npud and both packages into a temporary directory.
func buildPackages(t *testing.T) (deb, rpm string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "npud")
	build := exec.Command("go", "build", "-tags", "nomsgpack", "-buildmode=pie", "-ldflags", "-s -w -linkmode=external -extldflags=-Wl,-z,relro,-z,now", "-o", bin, ".")
	build.Dir = ".."
	// cgo on: a dynamically linked binary, as lintian expects of a .deb.
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	dist := filepath.Join(dir, "dist")
	cmd := exec.Command("bash", "packaging/build.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "NPUD_BINARY="+bin, "DIST_DIR="+dist, "VERSION=1.2.3~test")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	debs, _ := filepath.Glob(filepath.Join(dist, "*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(dist, "*.rpm"))
	require.Len(t, debs, 1, "%s", out)
	require.Len(t, rpms, 1, "%s", out)
	return debs[0], rpms[0]
}

func TestPackages(t *testing.T) {
	need(t, "dpkg-deb")
	lintian := need(t, "lintian")
	rpmTool := need(t, "rpm")
	deb, rpm := buildPackages(t)

	listing := run(t, "", "dpkg-deb", "--contents", deb)
	for _, path := range []string{"./usr/bin/npud", "./lib/systemd/system/npud.service", "./lib/systemd/system/npud.socket",
		"./etc/npud/npud.toml", "./usr/share/doc/npud/README.md", "./usr/share/doc/npud/OPERATIONS.md",
		"./usr/share/doc/npud/copyright", "./usr/share/doc/npud/changelog.gz", "./usr/share/npud/grafana-dashboard.json"} {
		assert.Contains(t, listing, path)
	}
	assert.Regexp(t, `-rwxr-xr-x root/root .* ./usr/bin/npud`, listing)

	ctrl := t.TempDir()
	run(t, "", "dpkg-deb", "--control", deb, ctrl)
	conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/npud/npud.toml", strings.TrimSpace(string(conffiles)), "the configuration survives upgrades")
	control := run(t, "", "dpkg-deb", "--field", deb)
	assert.Contains(t, control, "Package: npud")
	assert.Contains(t, control, "Version: 1.2.3~test")
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		assert.FileExists(t, filepath.Join(ctrl, script))
	}

	// The packaged unit is the one in systemd/, unchanged.
	x := t.TempDir()
	run(t, "", "dpkg-deb", "--extract", deb, x)
	packaged, err := os.ReadFile(filepath.Join(x, "lib/systemd/system/npud.service"))
	require.NoError(t, err)
	mine, err := os.ReadFile("../systemd/npud.service")
	require.NoError(t, err)
	assert.Equal(t, string(mine), string(packaged))
	out, err := exec.Command(filepath.Join(x, "usr/bin/npud"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)

	lint, _ := exec.Command(lintian, "--tag-display-limit", "0", deb).CombinedOutput()
	t.Logf("lintian:\n%s", lint)
	errorsFound := regexp.MustCompile(`(?m)^E: .*$`).FindAllString(string(lint), -1)
	assert.Empty(t, errorsFound, "lintian errors")

	rpmList := run(t, "", rpmTool, "-qlp", rpm)
	for _, path := range []string{"/usr/bin/npud", "/usr/lib/systemd/system/npud.service", "/etc/npud/npud.toml"} {
		assert.Contains(t, rpmList, path)
	}
	assert.Equal(t, "/etc/npud/npud.toml", strings.TrimSpace(run(t, "", rpmTool, "-qp", "--configfiles", rpm)))
	scripts := run(t, "", rpmTool, "-qp", "--scripts", rpm)
	assert.Contains(t, scripts, "postinstall scriptlet")
	assert.Contains(t, scripts, "/run/systemd/system")
}

// Outside systemd (a container, a chroot, this machine) the maintainer
// scripts must succeed without touching systemctl.
func TestMaintainerScriptsOutsideSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here; the scripts would call it for real")
	}
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(fake, "systemctl"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\n"), 0o755))
	cases := [][]string{
		{"postinstall.sh", "configure"}, {"postinstall.sh", "configure", "0.9.0"}, {"postinstall.sh", "1"}, {"postinstall.sh", "2"},
		{"preremove.sh", "remove"}, {"preremove.sh", "upgrade", "1.0"}, {"preremove.sh", "0"}, {"preremove.sh", "1"},
		{"postremove.sh", "remove"}, {"postremove.sh", "purge"}, {"postremove.sh", "0"},
	}
	for _, c := range cases {
		cmd := exec.Command("sh", append([]string{filepath.Join("scripts", c[0])}, c[1:]...)...)
		cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%v: %s", c, out)
	}
	_, err := os.Stat(calls)
	assert.True(t, os.IsNotExist(err), "systemctl was called without systemd")
}

func TestScriptsAreShellcheckClean(t *testing.T) {
	shellcheck := need(t, "shellcheck")
	run(t, "", shellcheck, "build.sh", "scripts/postinstall.sh", "scripts/preremove.sh", "scripts/postremove.sh")
}

// The dashboard is valid JSON and only queries metrics npud exports.
func TestGrafanaDashboardQueriesKnownMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Panels)
	docs, err := os.ReadFile("../docs/OPERATIONS.md")
	require.NoError(t, err)
	metric := regexp.MustCompile(`npud_[a-z_]+`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			for _, name := range metric.FindAllString(target.Expr, -1) {
				name = strings.TrimSuffix(name, "_bucket")
				assert.Contains(t, string(docs), "`"+name+"`", "panel %q uses %s, which docs/OPERATIONS.md does not list", p.Title, name)
			}
		}
	}
}
