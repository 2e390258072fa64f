package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub/hubtest"
)

func TestPullCommand(t *testing.T) {
	hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	models := t.TempDir()

	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"pull", "--local", "--models-dir", models, "OpenVINO/tiny-ov"},
		env("NPUD_HUB_ENDPOINT", hubSrv.URL), &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), `success: model "tiny-ov"`)
	got, err := os.ReadFile(filepath.Join(models, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, "weights", string(got))

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"pull", "--local"}, env(), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "usage: npud pull")
	assert.Equal(t, 1, Main(context.Background(), []string{"pull", "--local", "--models-dir", models, "OpenVINO/tiny-ov"},
		env("NPUD_HUB_ENDPOINT", hubSrv.URL), &stdout, &stderr), "already there")
}

// Issue 11: `npud pull` printed a file's line only when it was complete, so
// a multi-GB file looked hung. Bytes inside a file are shown at most every
// second, and every step once.
func TestPullPrinterShowsBytesInsideAFile(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	show := pullPrinter(&out, func() time.Time { return clock })
	show(npu.PullProgress{Status: "pulling manifest"})
	const gib = int64(1) << 30
	for done := int64(0); done <= 4*gib; done += gib / 4 {
		clock = clock.Add(300 * time.Millisecond)
		show(npu.PullProgress{Status: "downloading openvino_model.bin", Digest: "openvino_model.bin", Total: 4 * gib, Completed: done})
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Equal(t, "pulling manifest", lines[0])
	assert.Contains(t, lines, "downloading openvino_model.bin 4.0 GiB/4.0 GiB (100%)")
	var inside int
	for _, l := range lines {
		if strings.Contains(l, "GiB/4.0 GiB") && !strings.Contains(l, "(100%)") {
			inside++
		}
	}
	assert.GreaterOrEqual(t, inside, 3, "bytes moving inside the file:\n%s", out.String())
	assert.Less(t, len(lines), 17, "throttled to a line a second:\n%s", out.String())
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		assert.Equal(t, want, byteSize(n))
	}
}

// startDaemon serves the daemon configured by args on loopback until the
// test ends.
func startDaemon(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := daemon.ParseServe(append([]string{"--listen", "127.0.0.1:0"}, args...), env(), io.Discard)
	require.NoError(t, err)
	srv, err := daemon.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	return srv.Addr().String()
}

// Issue 27: the models folder belongs to the daemon, so `npud pull`
// through a daemon on the simulated engine fills it (it was a 501).
// Issue 35: but the simulated engine serves none of it, and the pull said
// "success" into nothing: list, run and rm did not know the model. Now
// the pull ends with why it cannot be served and what to do, list shows
// it as such, rm removes it, and "try pulling it first" is said only
// where a pull would help.
func TestPullIntoAnEngineThatCannotServeIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		why  string
	}{
		{"sim", []string{"--engine", "sim"}, "--engine sim serves only its simulated models"},
		{"auto without OpenVINO", []string{"--engine", "auto", "--openvino-lib", "/nonexistent/libopenvino_genai_c.so"}, "libopenvino_genai_c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "sim" && !daemon.OpenVINOBuilt {
				tc.why = "without cgo"
			}
			hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
			models := filepath.Join(t.TempDir(), "models")
			host := startDaemon(t, append(tc.args, "--models-dir", models, "--hub-endpoint", hubSrv.URL)...)
			npud := func(args ...string) (int, string, string) {
				var stdout, stderr bytes.Buffer
				code := Main(t.Context(), append(args, "--host", host), env(), &stdout, &stderr)
				return code, stdout.String(), stderr.String()
			}

			code, stdout, stderr := npud("pull", "OpenVINO/tiny-ov")
			assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.NotContains(t, stdout, "success")
			assert.Contains(t, stderr, "tiny-ov is pulled into "+models+", but it cannot be served: ")
			assert.Contains(t, stderr, tc.why)
			assert.Contains(t, stderr, "npud doctor")
			got, err := os.ReadFile(filepath.Join(models, "tiny-ov", "openvino_model.bin"))
			require.NoError(t, err, "the files stay, for when the engine can serve them")
			assert.Equal(t, "weights", string(got))

			code, stdout, stderr = npud("list")
			require.Equal(t, 0, code, stderr)
			assert.Regexp(t, `(?m)^tiny-ov\s+13 B\s+NOT SERVED\s`, stdout)
			assert.Contains(t, stdout, "tiny-ov is pulled but not served: ")
			assert.Contains(t, stdout, tc.why)

			code, _, stderr = npud("run", "tiny-ov", "Say hello")
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "cannot be served")
			assert.NotContains(t, stderr, "try pulling it first", "it is pulled")

			code, stdout, stderr = npud("rm", "tiny-ov")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, `deleted "tiny-ov"`)
			assert.NoDirExists(t, filepath.Join(models, "tiny-ov"))
			_, stdout, _ = npud("list")
			assert.NotContains(t, stdout, "tiny-ov")

			for _, cmd := range [][]string{{"rm", "tiny-ov"}, {"stop", "tiny-ov"}} {
				code, _, stderr = npud(cmd...)
				assert.Equal(t, 1, code, "%v", cmd)
				assert.Contains(t, stderr, "not served here", "%v", cmd)
				assert.NotContains(t, stderr, "try pulling it first", "%v: a pull would not help", cmd)
			}
			_, _, stderr = npud("show", "tiny-ov")
			assert.Contains(t, stderr, "try pulling it first", "show: a pull would help")
		})
	}
}

// Issue 35: `HF_ENDPOINT=… npud pull X` ignored the variable (the daemon
// pulls, from its own hub) and `npud pull --hub-endpoint` was "flag
// provided but not defined": both now say that the daemon pulls and how to
// point it at another hub.
func TestPullSaysTheDaemonChoosesTheHub(t *testing.T) {
	daemonsHub := hubtest.Serve(t, "OpenVINO/other-ov", map[string]string{"openvino_model.xml": "<net/>"})
	host := startDaemon(t, "--engine", "sim", "--models-dir", t.TempDir(), "--hub-endpoint", daemonsHub.URL)
	mine := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>"})

	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"pull", "OpenVINO/tiny-ov", "--host", host}, env("HF_ENDPOINT", mine.URL), &stdout, &stderr)
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Contains(t, stderr.String(), "HF_ENDPOINT is set here, but the daemon pulls, from its own hub: start it with --hub-endpoint URL (or NPUD_HUB_ENDPOINT")
	assert.Contains(t, stderr.String(), "npud pull --local --hub-endpoint URL OWNER/NAME")

	stderr.Reset()
	code = Main(t.Context(), []string{"pull", "--hub-endpoint", mine.URL, "OpenVINO/tiny-ov", "--host", host}, env(), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "--hub-endpoint: the daemon pulls, from its own hub")

	stderr.Reset()
	code = Main(t.Context(), []string{"pull", "OpenVINO/tiny-ov", "--host", host}, env(), &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.NotContains(t, stderr.String(), "HF_ENDPOINT", "without it set, the daemon's error alone")
}

// Issue 35: pull printed each file's last line twice (the hub reports a
// file complete when its bytes are in and again once verified).
func TestPullPrintsEachLineOnce(t *testing.T) {
	hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"pull", "--local", "--models-dir", t.TempDir(), "OpenVINO/tiny-ov"},
		env("NPUD_HUB_ENDPOINT", hubSrv.URL), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		assert.False(t, seen[l], "printed twice: %q in\n%s", l, stdout.String())
		seen[l] = true
	}
	assert.Contains(t, lines, "downloading openvino_model.bin 7 B/7 B (100%)")
}
