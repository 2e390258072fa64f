// Package packaging checks npud's packages: the .deb and .rpm that build.sh
// makes with nfpm (contents, conffiles, lintian), the maintainer scripts
// with and without systemd, and the Grafana dashboard's queries.
//
// The tests run in packaging/, so the repository root is "..". The tools
// (dpkg-deb, lintian, rpm, shellcheck) come from Debian packages; a missing
// one skips its test locally and fails it in CI (CI=true), where make test
// installs them.
package packaging

import (
	"archive/zip"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// need returns the path of tool, or skips (fails in CI) when it is missing.
func need(t *testing.T, tool, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: apt-get install %s (make test installs it)", tool, debianPackage)
		}
		t.Skipf("%s is missing: apt-get install %s", tool, debianPackage)
	}
	return path
}

// run runs a command and returns its output, failing the test on an error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// docs are the documents both packages ship: README.md and docs/*.md.
func docs(t *testing.T) []string {
	t.Helper()
	names := []string{"README.md"}
	found, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, found)
	for _, f := range found {
		names = append(names, filepath.Base(f))
	}
	return names
}

// debArch is dpkg's name for GOARCH, as nfpm maps it.
var debArch = map[string]string{"amd64": "amd64", "arm64": "arm64", "386": "i386", "arm": "armhf", "ppc64le": "ppc64el", "riscv64": "riscv64", "s390x": "s390x"}

// versionLine is what build.sh prints about the version it packages.
var versionLine = regexp.MustCompile(`(?m)^build\.sh: npud (\S+) for (\S+)$`)

// buildPackages builds npud as make package does (cgo, PIE, full RELRO:
// what lintian expects of a Debian binary) into a temporary directory, then
// both packages with build.sh, the version left to build.sh.
func buildPackages(t *testing.T) (deb, rpm, version string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "npud")
	build := exec.CommandContext(t.Context(), "go", "build", "-tags", "nomsgpack", "-buildmode=pie",
		"-ldflags", "-s -w -linkmode=external -extldflags=-Wl,-z,relro,-z,now", "-o", bin, ".")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	dist := filepath.Join(dir, "dist")
	cmd := exec.CommandContext(t.Context(), "bash", "build.sh")
	cmd.Env = append(withoutEnv("VERSION", "DIST_DIR", "NPUD_BINARY"), "NPUD_BINARY="+bin, "DIST_DIR="+dist)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "build.sh:\n%s", out)
	t.Logf("build.sh:\n%s", out)
	m := versionLine.FindStringSubmatch(string(out))
	require.NotNil(t, m, "build.sh names the version it packages:\n%s", out)

	debs, _ := filepath.Glob(filepath.Join(dist, "*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(dist, "*.rpm"))
	require.Len(t, debs, 1, "%s", out)
	require.Len(t, rpms, 1, "%s", out)
	assert.Equal(t, fmt.Sprintf("npud_%s_%s.deb", m[1], debArch[runtime.GOARCH]), filepath.Base(debs[0]))
	return debs[0], rpms[0], m[1]
}

// withoutEnv is the environment less the named variables.
func withoutEnv(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}

func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the .deb and .rpm: not with -short")
	}
	need(t, "dpkg-deb", "dpkg")
	deb, rpm, version := buildPackages(t)

	t.Run("version", func(t *testing.T) {
		// From git describe: a tag, a tag+gitN.SHA or 0.1.0~gitN.SHA.
		assert.Regexp(t, `^[0-9][A-Za-z0-9.+~]*$`, version)
		assert.Equal(t, strings.TrimSpace(run(t, "bash", "version.sh")), version, "packaging/version.sh says it")
		if dpkg, err := exec.LookPath("dpkg"); err == nil {
			run(t, dpkg, "--validate-version", version)
		}
	})

	t.Run("deb contents", func(t *testing.T) {
		listing := run(t, "dpkg-deb", "--contents", deb)
		want := map[string]string{
			"./usr/bin/npud":                          "-rwxr-xr-x",
			"./lib/systemd/system/npud.service":       "-rw-r--r--",
			"./lib/systemd/system/npud.socket":        "-rw-r--r--",
			"./etc/npud/npud.toml":                    "-rw-r--r--",
			"./usr/share/doc/npud/copyright":          "-rw-r--r--",
			"./usr/share/doc/npud/changelog.gz":       "-rw-r--r--",
			"./usr/share/man/man1/npud.1.gz":          "-rw-r--r--",
			"./usr/share/npud/grafana-dashboard.json": "-rw-r--r--",
		}
		for _, doc := range docs(t) {
			want["./usr/share/doc/npud/"+doc] = "-rw-r--r--"
		}
		for path, mode := range want {
			assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(mode)+` root/root .* `+regexp.QuoteMeta(path)+`$`, listing, path)
		}
		assert.NotContains(t, listing, "./usr/lib/systemd/", "Debian 12 units go to /lib/systemd/system")

		control := run(t, "dpkg-deb", "--field", deb)
		for _, field := range []string{
			"Package: npud", "Version: " + version, "Architecture: " + debArch[runtime.GOARCH],
			"Maintainer: npud developers <npud@example.org>", "Section: net", "Priority: optional",
			"Homepage: https://github.com/npud/npud", "Depends: libc6",
		} {
			assert.Contains(t, control, field+"\n")
		}
	})

	t.Run("deb control and files", func(t *testing.T) {
		ctrl := t.TempDir()
		run(t, "dpkg-deb", "--control", deb, ctrl)
		conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
		require.NoError(t, err)
		assert.Equal(t, "/etc/npud/npud.toml", strings.TrimSpace(string(conffiles)), "upgrades keep local edits")
		for script, src := range map[string]string{"postinst": "postinstall.sh", "prerm": "preremove.sh", "postrm": "postremove.sh"} {
			got, err := os.ReadFile(filepath.Join(ctrl, script))
			require.NoError(t, err, script)
			want, err := os.ReadFile(filepath.Join("scripts", src))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), script)
		}

		// The packaged files are the repository's, unchanged.
		root := t.TempDir()
		run(t, "dpkg-deb", "--extract", deb, root)
		for packaged, src := range map[string]string{
			"lib/systemd/system/npud.service":       "../systemd/npud.service",
			"lib/systemd/system/npud.socket":        "../systemd/npud.socket",
			"etc/npud/npud.toml":                    "npud.toml",
			"usr/share/npud/grafana-dashboard.json": "grafana-dashboard.json",
			"usr/share/doc/npud/copyright":          "copyright",
			"usr/share/npud/fleet/nginx-npud.conf":  "fleet/nginx-npud.conf",
			"usr/share/npud/fleet/haproxy-npud.cfg": "fleet/haproxy-npud.cfg",
		} {
			got, err := os.ReadFile(filepath.Join(root, packaged))
			require.NoError(t, err)
			want, err := os.ReadFile(src)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), packaged)
		}

		// A Debian changelog whose entry is this version.
		f, err := os.Open(filepath.Join(root, "usr/share/doc/npud/changelog.gz"))
		require.NoError(t, err)
		defer f.Close()
		gz, err := gzip.NewReader(f)
		require.NoError(t, err)
		changelog, err := io.ReadAll(gz)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(changelog), "npud ("+version+") unstable; urgency=medium\n"), "%s", changelog)
		assert.Regexp(t, `(?m)^ -- npud developers <npud@example\.org>  \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$`, string(changelog))

		// Every link in the installed docs leads to an installed file.
		assertLinksResolve(t, filepath.Join(root, "usr/share/doc/npud"), func(abs string) bool {
			_, err := os.Stat(filepath.Join(root, abs))
			return err == nil
		})

		// The packaged binary runs.
		out, err := exec.CommandContext(t.Context(), filepath.Join(root, "usr/bin/npud"), "version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		servesThroughTheTestLibrary(t, filepath.Join(root, "usr/bin/npud"))
	})

	t.Run("lintian", func(t *testing.T) {
		lintian := need(t, "lintian", "lintian")
		// lintian exits non-zero on errors; its output decides.
		out, _ := exec.CommandContext(t.Context(), lintian, "--tag-display-limit", "0", deb).CombinedOutput()
		var errs, others []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			switch {
			case strings.HasPrefix(line, "E: "):
				errs = append(errs, line)
			case line != "":
				others = append(others, line)
			}
		}
		t.Logf("lintian (%d errors, %d other lines):\n%s", len(errs), len(others), strings.Join(others, "\n"))
		assert.Empty(t, errs, "lintian errors")
	})

	t.Run("rpm", func(t *testing.T) {
		rpmTool := need(t, "rpm", "rpm")
		list := run(t, rpmTool, "-qlp", rpm)
		want := []string{"/usr/bin/npud", "/usr/lib/systemd/system/npud.service", "/usr/lib/systemd/system/npud.socket",
			"/etc/npud/npud.toml", "/usr/share/licenses/npud/copyright", "/usr/share/npud/grafana-dashboard.json"}
		for _, doc := range docs(t) {
			want = append(want, "/usr/share/doc/npud/"+doc)
		}
		for _, path := range want {
			assert.Contains(t, list, path+"\n")
		}
		assert.Equal(t, "/etc/npud/npud.toml", strings.TrimSpace(run(t, rpmTool, "-qp", "--configfiles", rpm)))
		// c = %config, n = noreplace: an edited file stays, the new one lands as .rpmnew.
		flags := run(t, rpmTool, "-qp", "--queryformat", "[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILENAMES}\n]", rpm)
		assert.Contains(t, flags, "cn -rw-r--r-- /etc/npud/npud.toml\n")
		assert.Contains(t, flags, " -rwxr-xr-x /usr/bin/npud\n")
		assert.Equal(t, "npud "+version, run(t, rpmTool, "-qp", "--queryformat", "%{NAME} %{VERSION}", rpm))
		scripts := run(t, rpmTool, "-qp", "--scripts", rpm)
		for _, scriptlet := range []string{"postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet"} {
			assert.Contains(t, scripts, scriptlet)
		}
		assert.Contains(t, scripts, "/run/systemd/system")
	})
}

func TestBuildScriptRejectsBadInput(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"version with a v", []string{"VERSION=v1.0.0", "NPUD_BINARY=/bin/true"}, "not a valid Debian/RPM version"},
		{"version with a hyphen", []string{"VERSION=1.0.0-1", "NPUD_BINARY=/bin/true"}, "not a valid Debian/RPM version"},
		{"no binary", []string{"VERSION=1.0.0", "NPUD_BINARY=" + filepath.Join(t.TempDir(), "npud")}, "run make build first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "bash", "build.sh")
			cmd.Env = append(withoutEnv("VERSION", "NPUD_BINARY", "DIST_DIR"), append(tc.env, "DIST_DIR="+dist)...)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "%s", out)
			assert.Contains(t, string(out), tc.want)
			assert.NoDirExists(t, dist, "nothing is built")
		})
	}
}

// fakeSystemctl puts a systemctl first in PATH that appends its arguments to
// a file and fails for the verbs in $FAKE_SYSTEMCTL_FAIL; it returns the
// environment for the scripts and a function reading the recorded calls.
func fakeSystemctl(t *testing.T) (env []string, calls func() []string) {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := "#!/bin/sh\n" +
		"echo \"$*\" >> '" + log + "'\n" +
		"case \" ${FAKE_SYSTEMCTL_FAIL:-} \" in *\" $1 \"*) exit 1 ;; esac\n" +
		"exit 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755))
	env = append(withoutEnv("PATH"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return env, func() []string {
		data, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		require.NoError(t, os.Remove(log))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

// scriptCalls is every way dpkg and rpm call the scripts, with the
// systemctl calls each must make under systemd.
var scriptCalls = []struct {
	script string
	args   []string
	want   []string
}{
	// dpkg: configure with no previous version is a first install.
	{"postinstall.sh", []string{"configure", ""}, []string{"daemon-reload", "enable npud.service", "start npud.service"}},
	{"postinstall.sh", []string{"configure"}, []string{"daemon-reload", "enable npud.service", "start npud.service"}},
	{"postinstall.sh", []string{"configure", "0.9.0"}, []string{"daemon-reload", "try-restart npud.service"}},
	{"postinstall.sh", []string{"abort-upgrade", "1.0.0"}, []string{"daemon-reload"}},
	{"preremove.sh", []string{"remove"}, []string{"disable --now npud.socket npud.service"}},
	{"preremove.sh", []string{"upgrade", "1.1.0"}, nil},
	{"preremove.sh", []string{"failed-upgrade", "1.1.0"}, nil},
	{"postremove.sh", []string{"remove"}, []string{"daemon-reload", "reset-failed npud.service npud.socket"}},
	{"postremove.sh", []string{"purge"}, []string{"daemon-reload", "reset-failed npud.service npud.socket"}},
	{"postremove.sh", []string{"upgrade", "1.1.0"}, []string{"daemon-reload"}},
	// rpm: $1 counts the packages installed after the transaction.
	{"postinstall.sh", []string{"1"}, []string{"daemon-reload", "enable npud.service", "start npud.service"}},
	{"postinstall.sh", []string{"2"}, []string{"daemon-reload", "try-restart npud.service"}},
	{"preremove.sh", []string{"0"}, []string{"disable --now npud.socket npud.service"}},
	{"preremove.sh", []string{"1"}, nil},
	{"postremove.sh", []string{"0"}, []string{"daemon-reload", "reset-failed npud.service npud.socket"}},
	{"postremove.sh", []string{"1"}, []string{"daemon-reload"}},
}

// Outside systemd (a container, a chroot, this machine) the maintainer
// scripts succeed and leave systemctl alone.
func TestMaintainerScriptsOutsideSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs this machine: the scripts would talk to it")
	}
	env, calls := fakeSystemctl(t)
	cwd := t.TempDir()
	for _, c := range scriptCalls {
		script, err := filepath.Abs(filepath.Join("scripts", c.script))
		require.NoError(t, err)
		cmd := exec.CommandContext(t.Context(), "sh", append([]string{script}, c.args...)...)
		cmd.Dir = cwd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s %q: %s", c.script, c.args, out)
		assert.Empty(t, calls(), "%s %q called systemctl without systemd", c.script, c.args)
	}
	entries, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, entries, "the scripts write nothing into their directory")
}

// Under systemd, as far as the scripts can tell: a private mount namespace
// with a tmpfs on /run holding /run/systemd/system (the host's /run is not
// touched), and the fake systemctl. Needs CAP_SYS_ADMIN; skipped without.
func TestMaintainerScriptsUnderSystemd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scripts in a mount namespace: not with -short")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux)")
	}
	// $0 is the script, the rest its arguments.
	const inNamespace = `mount -t tmpfs npud-test /run && mkdir -p /run/systemd/system && exec sh "$0" "$@"`
	probe := exec.CommandContext(t.Context(), unshare, "--mount", "--propagation", "private", "--", "sh", "-c", inNamespace, "/dev/null")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot make a private mount namespace here (%v): %s", err, out)
	}
	env, calls := fakeSystemctl(t)
	runScript := func(script string, args []string, extraEnv ...string) (string, error) {
		path, err := filepath.Abs(filepath.Join("scripts", script))
		require.NoError(t, err)
		cmd := exec.CommandContext(t.Context(), unshare, append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", inNamespace, path}, args...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = slices.Concat(env, extraEnv)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range scriptCalls {
		out, err := runScript(c.script, c.args)
		assert.NoError(t, err, "%s %q: %s", c.script, c.args, out)
		assert.Equal(t, c.want, calls(), "%s %q", c.script, c.args)
	}

	// A service that cannot start must not fail the package installation.
	out, err := runScript("postinstall.sh", []string{"configure", ""}, "FAKE_SYSTEMCTL_FAIL=start daemon-reload")
	assert.NoError(t, err, "%s", out)
	assert.Contains(t, out, "systemctl status npud")
	assert.Equal(t, []string{"daemon-reload", "enable npud.service", "start npud.service"}, calls())
	// Nor may a failing systemctl fail a removal.
	out, err = runScript("preremove.sh", []string{"remove"}, "FAKE_SYSTEMCTL_FAIL=disable")
	assert.NoError(t, err, "%s", out)
	calls()
}

func TestScriptsAreShellcheckClean(t *testing.T) {
	shellcheck := need(t, "shellcheck", "shellcheck")
	run(t, shellcheck, "--shell=bash", "build.sh", "build-windows.sh")
	run(t, shellcheck, "--shell=sh", "scripts/postinstall.sh", "scripts/preremove.sh", "scripts/postremove.sh")
}

// The metrics npud exports, with their labels: the dashboard queries these
// and nothing else.
var metricLabels = map[string][]string{
	"npud_time_to_first_token_seconds": {"model", "device", "route", "tenant"},
	"npud_inter_token_latency_seconds": {"model", "device", "route"},
	"npud_request_duration_seconds":    {"model", "device", "route", "tenant"},
	"npud_queue_wait_seconds":          {"model"},
	"npud_model_load_seconds":          {"model", "device"},
	"npud_requests_total":              {"model", "route", "tenant", "finished_reason"},
	"npud_prompt_tokens_total":         {"model", "tenant"},
	"npud_completion_tokens_total":     {"model", "tenant"},
	"npud_client_disconnects_total":    {"route", "cause"},
	"npud_slow_consumer_events_total":  {"route", "action"},
	"npud_engine_errors_total":         {"model", "device", "kind"},
	"npud_rate_limited_total":          {"tenant", "reason"},
	"npud_active_streams":              {"model"},
	"npud_queue_depth":                 {"model"},
	"npud_build_info":                  {"version", "engine", "goversion"},
	"npud_device_info":                 {"device", "name"},
}

var histograms = []string{
	"npud_time_to_first_token_seconds", "npud_inter_token_latency_seconds", "npud_request_duration_seconds",
	"npud_queue_wait_seconds", "npud_model_load_seconds",
}

type dashboard struct {
	SchemaVersion int
	UID           string
	Templating    struct {
		List []struct {
			Name, Type string
			Query      any
		}
	}
	Panels []panel
}

type datasource struct{ Type, UID string }

type panel struct {
	ID          int
	Type, Title string
	Datasource  *datasource
	GridPos     struct{ X, Y, W, H int }
	Targets     []struct {
		Expr       string
		Datasource *datasource
	}
}

var (
	metricRef = regexp.MustCompile(`\b(npud_[a-z_]+?)(_bucket)?\b(\{[^}]*\})?`)
	selector  = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)`)
	byClause  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	quantile  = regexp.MustCompile(`histogram_quantile\(\s*([0-9.]+)\s*,.*?\b(npud_[a-z_]+)_bucket\b`)
)

func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("grafana-dashboard.json")
	require.NoError(t, err)
	var dash dashboard
	require.NoError(t, json.Unmarshal(raw, &dash))
	assert.InDelta(t, 39, dash.SchemaVersion, 2, "schemaVersion")
	assert.NotEmpty(t, dash.UID)

	// ${DS_PROMETHEUS} is a datasource variable: it resolves when the file
	// is provisioned as it is and when it is imported through the UI.
	var dsVar bool
	for _, v := range dash.Templating.List {
		if v.Name == "DS_PROMETHEUS" {
			dsVar = v.Type == "datasource" && v.Query == "prometheus"
		}
	}
	assert.True(t, dsVar, "a datasource variable DS_PROMETHEUS of type prometheus")

	used := map[string]bool{}
	quantiles := map[string][]string{}
	ids := map[int]bool{}
	var tokensPanel bool
	var cells [][4]int
	for _, p := range dash.Panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q is wider than the grid", p.Title)
		for _, c := range cells {
			overlap := p.GridPos.X < c[0]+c[2] && c[0] < p.GridPos.X+p.GridPos.W && p.GridPos.Y < c[1]+c[3] && c[1] < p.GridPos.Y+p.GridPos.H
			assert.False(t, overlap, "panel %q overlaps another", p.Title)
		}
		cells = append(cells, [4]int{p.GridPos.X, p.GridPos.Y, p.GridPos.W, p.GridPos.H})
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, p.Title)
		assert.Equal(t, datasource{"prometheus", "${DS_PROMETHEUS}"}, *p.Datasource, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		if strings.Contains(strings.ToLower(p.Title), "tokens/s") {
			tokensPanel = true
		}
		for _, target := range p.Targets {
			expr := target.Expr
			require.NotNil(t, target.Datasource, p.Title)
			assert.Equal(t, "${DS_PROMETHEUS}", target.Datasource.UID, p.Title)
			refs := metricRef.FindAllStringSubmatch(expr, -1)
			require.NotEmpty(t, refs, "panel %q: %s queries no npud metric", p.Title, expr)
			// Labels the expression may use: those every metric in it has.
			var common []string
			for i, ref := range refs {
				name, bucket, sel := ref[1], ref[2] != "", ref[3]
				labels, known := metricLabels[name]
				require.True(t, known, "panel %q queries %s, which npud does not export", p.Title, name+ref[2])
				if bucket {
					require.Contains(t, histograms, name, "%s is no histogram", name)
					labels = append(slices.Clone(labels), "le")
				}
				used[name] = true
				for _, s := range selector.FindAllStringSubmatch(sel, -1) {
					assert.Contains(t, labels, s[1], "panel %q selects %s on %s", p.Title, s[1], name)
				}
				if i == 0 {
					common = labels
				} else {
					common = slices.DeleteFunc(slices.Clone(common), func(l string) bool { return !slices.Contains(labels, l) })
				}
			}
			for _, by := range byClause.FindAllStringSubmatch(expr, -1) {
				for _, label := range strings.Split(by[1], ",") {
					if label = strings.TrimSpace(label); label != "" {
						assert.Contains(t, common, label, "panel %q groups by %s: %s", p.Title, label, expr)
					}
				}
			}
			if strings.Contains(expr, "_total") {
				assert.Regexp(t, `(rate|increase)\(npud_[a-z_]+_total`, expr, "panel %q: a counter is shown as a rate", p.Title)
			}
			for _, q := range quantile.FindAllStringSubmatch(expr, -1) {
				quantiles[q[2]] = append(quantiles[q[2]], q[1])
			}
		}
	}
	var all []string
	for name := range metricLabels {
		all = append(all, name)
	}
	sort.Strings(all)
	for _, name := range all {
		assert.True(t, used[name], "no panel shows %s", name)
	}
	for _, h := range histograms {
		assert.Contains(t, quantiles[h], "0.5", "%s p50", h)
		assert.Contains(t, quantiles[h], "0.99", "%s p99", h)
	}
	assert.True(t, tokensPanel, "a tokens/s panel")

	// The operations guide documents every metric the dashboard shows.
	guide, err := os.ReadFile("../docs/OPERATIONS.md")
	require.NoError(t, err)
	for _, name := range all {
		assert.Contains(t, string(guide), "`"+name+"`", "docs/OPERATIONS.md does not list %s", name)
	}
}

// servesThroughTheTestLibrary starts a packaged binary on npud's GenAI test
// library (--openvino-lib) and streams a chat from it (issue 14: the
// package carries the engine; nothing is built against the library).
func servesThroughTheTestLibrary(t *testing.T, bin string) {
	t.Helper()
	lib, err := ovtestlib.Dir(ovtestlib.Current)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	models := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(models, "tiny"), 0o755))
	for f, content := range map[string]string{
		"openvino_model.xml":    "<net/>",
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(models, "tiny", f), []byte(content), 0o644))
	}
	cmd := exec.CommandContext(t.Context(), bin, "serve", "--engine", "openvino", "--openvino-lib", lib, "--models-dir", models,
		"--cache-dir", "", "--device", "CPU", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "OVTEST_DEVICES=CPU")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	listening := regexp.MustCompile(`msg="npud listening" addr=(\S+)`)
	lines := make(chan string, 64)
	go func() {
		r := bufio.NewScanner(stderr)
		for r.Scan() {
			lines <- r.Text()
		}
		close(lines)
	}()
	var addr string
	deadline := time.After(30 * time.Second)
	for addr == "" {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the packaged npud stopped before listening")
			if m := listening.FindStringSubmatch(line); m != nil {
				addr = m[1]
				assert.Contains(t, line, "engine=openvino")
			}
		case <-deadline:
			t.Fatal("the packaged npud did not start")
		}
	}
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/api/chat",
		strings.NewReader(`{"model":"tiny","messages":[{"role":"user","content":"hello from the package"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var text strings.Builder
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		require.NoError(t, json.Unmarshal([]byte(line), &last), line)
		if msg, ok := last["message"].(map[string]any); ok {
			text.WriteString(msg["content"].(string))
		}
	}
	assert.Equal(t, true, last["done"])
	assert.NotEmpty(t, text.String(), "the test library's answer streamed through the packaged binary")
}

// Issue 14: after installing, the package says what real inference still
// needs when npud doctor finds something missing, and never fails.
func TestPostinstallPointsToDoctor(t *testing.T) {
	dir := t.TempDir()
	for name, code := range map[string]int{"missing": 1, "ready": 0} {
		fake := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(fake, []byte(fmt.Sprintf("#!/bin/sh\n[ \"$1\" = doctor ] && exit %d\nexit 0\n", code)), 0o755))
	}
	script, err := filepath.Abs(filepath.Join("scripts", "postinstall.sh"))
	require.NoError(t, err)
	for _, tc := range []struct {
		npud  string
		args  []string
		saysF bool
	}{
		{"missing", []string{"configure", ""}, true},
		{"missing", []string{"1"}, true},
		{"ready", []string{"configure", ""}, false},
		{"missing", []string{"abort-upgrade", "1.0"}, false},
	} {
		cmd := exec.CommandContext(t.Context(), "sh", append([]string{script}, tc.args...)...)
		cmd.Env = append(withoutEnv("NPUD_BIN"), "NPUD_BIN="+filepath.Join(dir, tc.npud))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, tc.saysF, strings.Contains(string(out), "npud doctor"), "%s %v: %s", tc.npud, tc.args, out)
	}
}

// Issue 14: make package's Windows zip holds npud.exe with the engine
// (cgo, mingw-w64), the example configuration and the README; the test
// library builds as Windows DLLs exporting every function npud resolves.
// (Their tests cannot run under Debian 12's Wine 8: Go's runtime needs
// bcryptprimitives.dll's ProcessPrng, which that Wine lacks.)
func TestWindowsZip(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the Windows zip: not with -short")
	}
	need(t, "x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64")
	need(t, "zip", "zip")
	dist := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "build-windows.sh")
	cmd.Env = append(withoutEnv("VERSION", "DIST_DIR"), "VERSION=1.2.3", "DIST_DIR="+dist)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	zr, err := zip.OpenReader(filepath.Join(dist, "npud_1.2.3_windows_amd64.zip"))
	require.NoError(t, err)
	defer zr.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	for _, name := range []string{"npud/npud.exe", "npud/npud.toml", "npud/README.md", "npud/OPENVINO.md"} {
		require.Contains(t, files, name)
	}
	exe, err := files["npud/npud.exe"].Open()
	require.NoError(t, err)
	head := make([]byte, 2)
	_, err = io.ReadFull(exe, head)
	require.NoError(t, err)
	_ = exe.Close()
	assert.Equal(t, "MZ", string(head), "a Windows executable")
	data, err := io.ReadAll(mustOpen(t, files["npud/npud.exe"]))
	require.NoError(t, err)
	assert.Contains(t, string(data), "openvino_genai_c.dll", "it carries the engine, which loads GenAI's DLL")
	assert.Contains(t, string(data), "LoadLibraryExA")

	// The example configuration parses as npud's.
	cfgFile := filepath.Join(t.TempDir(), "npud.toml")
	cfgData, err := io.ReadAll(mustOpen(t, files["npud/npud.toml"]))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgFile, cfgData, 0o644))
	check := exec.CommandContext(t.Context(), "go", "run", ".", "config", "check", "--config", cfgFile)
	check.Dir = ".."
	out, err = check.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The test library as DLLs: every function the loader resolves is
	// exported by the DLL that ships it.
	need(t, "x86_64-w64-mingw32-objdump", "binutils-mingw-w64-x86-64")
	dlls := t.TempDir()
	out, err = exec.CommandContext(t.Context(), "make", "--no-print-directory", "-C", ovtestlib.Source(), "windows", "WINOUT="+dlls).CombinedOutput()
	require.NoError(t, err, "%s", out)
	header, err := os.ReadFile(filepath.Join("..", "npu", "openvino", "ovapi.h"))
	require.NoError(t, err)
	entries := regexp.MustCompile(`X\((CORE|GENAI), (\w+)\)`).FindAllStringSubmatch(string(header), -1)
	require.Greater(t, len(entries), 30)
	exports := map[string]string{}
	for lib, dll := range map[string]string{"CORE": "openvino_c.dll", "GENAI": "openvino_genai_c.dll"} {
		exports[lib] = run(t, "x86_64-w64-mingw32-objdump", "-p", filepath.Join(dlls, dll))
	}
	for _, e := range entries {
		assert.Regexp(t, `\]\s+`+e[2]+`\n`, exports[e[1]], "%s exported by the %s DLL", e[2], e[1])
	}
}

// Issue 14: make package keeps working without the cross compiler: the
// zip is skipped, with how to get it.
func TestWindowsZipSkippedWithoutMingw(t *testing.T) {
	dist := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "build-windows.sh")
	cmd.Env = append(withoutEnv("WINCC", "DIST_DIR"), "WINCC=no-such-compiler", "DIST_DIR="+dist)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "apt-get install gcc-mingw-w64-x86-64")
	entries, err := os.ReadDir(dist)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func mustOpen(t *testing.T, f *zip.File) io.Reader {
	t.Helper()
	r, err := f.Open()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Issue 27: `npud version` said `git describe` (8401ae1), the packages
// 0.1.0~git245.8401ae1 and the zip's name the first again. One script now
// says the version, and make package hands it to the binary, build.sh and
// build-windows.sh.
func TestOneVersionEverywhere(t *testing.T) {
	makeTool := need(t, "make", "make")
	want := strings.TrimSpace(run(t, "bash", "version.sh"))
	assert.Regexp(t, `^[0-9][A-Za-z0-9.+~]*$`, want, "a Debian and RPM version")

	cmd := exec.CommandContext(t.Context(), makeTool, "-s", "-n", "package")
	cmd.Dir = ".."
	cmd.Env = withoutEnv("VERSION", "MAKEFLAGS")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	plan := string(out)
	assert.Contains(t, plan, "daemon.Version="+want+" ", "the binary's npud version")
	assert.Contains(t, plan, "VERSION="+want+" bash packaging/build.sh", "the .deb and .rpm")
	assert.Contains(t, plan, "VERSION="+want+" bash packaging/build-windows.sh", "the zip's name")

	// build.sh and build-windows.sh on their own say the same.
	for _, script := range []string{"build.sh", "build-windows.sh"} {
		body, err := os.ReadFile(script)
		require.NoError(t, err)
		assert.Contains(t, string(body), `VERSION="${VERSION:-$(bash packaging/version.sh)}"`, script)
	}
}

// Issue 27: the packages install README.md and docs/*.md side by side in
// /usr/share/doc/npud, where the README's docs/... links (and the docs'
// ../README.md and ../packaging/...) led nowhere. flatdocs.sh rewrites them
// for the flat folder: every link leads to a file beside it or to one the
// package installs.
func TestFlatDocsLinksResolve(t *testing.T) {
	nfpm, err := os.ReadFile("nfpm.yaml")
	require.NoError(t, err)
	pkg := t.TempDir()
	run(t, "bash", "flatdocs.sh", pkg, "package")
	assertLinksResolve(t, pkg, func(abs string) bool { return strings.Contains(string(nfpm), "dst: "+abs+"\n") })

	win := t.TempDir()
	run(t, "bash", "flatdocs.sh", win, "windows")
	require.NoError(t, os.WriteFile(filepath.Join(win, "npud.toml"), nil, 0o644)) // the zip has it beside the docs
	assertLinksResolve(t, win, func(string) bool { return false })
}

// markdownLink is a Markdown link's target, up to an anchor.
var markdownLink = regexp.MustCompile(`\]\(([^)#\s]*)(#[^)]*)?\)`)

// assertLinksResolve checks every relative link in dir's Markdown files
// leads to a file in dir, and every absolute one to a file installed says
// exists; web addresses are left alone.
func assertLinksResolve(t *testing.T, dir string, installed func(abs string) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			switch {
			case target == "", strings.Contains(target, "://"), strings.HasPrefix(target, "mailto:"):
			case strings.HasPrefix(target, "/"):
				assert.True(t, installed(target), "%s links to %s, which is not installed", filepath.Base(f), target)
			default:
				_, err := os.Stat(filepath.Join(dir, target))
				assert.NoError(t, err, "%s links to %s, which is not beside it", filepath.Base(f), target)
			}
		}
	}
}

// Issue 27: make help printed the targets in an 8-wide column, so the two
// longer names pushed their lines out of it. Every description now starts
// in the same column, after at least two spaces.
func TestMakeHelpAligns(t *testing.T) {
	makeTool := need(t, "make", "make")
	cmd := exec.CommandContext(t.Context(), makeTool, "-s", "help")
	cmd.Dir = ".."
	cmd.Env = withoutEnv("MAKEFLAGS")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	require.Greater(t, len(lines), 5)
	column := -1
	for _, l := range lines {
		name := strings.Fields(l)[0]
		at := strings.Index(l, name) + len(name)
		gap := len(l[at:]) - len(strings.TrimLeft(l[at:], " "))
		assert.GreaterOrEqual(t, gap, 2, "%q", l)
		if column < 0 {
			column = at + gap
		}
		assert.Equal(t, column, at+gap, "%q starts its description elsewhere", l)
	}
}
