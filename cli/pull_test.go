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

// Issue 27: the models folder belongs to the daemon, so `npud pull`
// through a daemon on the simulated engine fills it too (it was a 501,
// "engine sim serves a fixed set of models").
func TestPullThroughADaemonOnTheSimulatedEngine(t *testing.T) {
	hubSrv := hubtest.Serve(t, "OpenVINO/tiny-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	models := filepath.Join(t.TempDir(), "models")
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "sim", "--models-dir", models,
		"--hub-endpoint", hubSrv.URL}, env(), io.Discard)
	require.NoError(t, err)
	srv, err := daemon.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()

	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"pull", "--host", srv.Addr().String(), "OpenVINO/tiny-ov"}, env(), &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	got, err := os.ReadFile(filepath.Join(models, "tiny-ov", "openvino_model.bin"))
	require.NoError(t, err)
	assert.Equal(t, "weights", string(got))
}
