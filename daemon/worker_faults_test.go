//go:build cgo

package daemon_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// startWorkers serves the test library's models through worker processes.
func startWorkers(t *testing.T, devices string, mutate func(*daemon.Config), models ...string) (*daemontest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	for _, m := range models {
		daemontest.WriteOpenVINOModel(t, dir, m)
	}
	t.Setenv("OVTEST_DEVICES", devices)
	t.Setenv("OVTEST_TOKEN_DELAY_US", "2000")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", dir, "AUTO", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	cfg.Isolation = "process"
	cfg.TokenTimeout, cfg.PrefillTimeout, cfg.RestartBackoff = time.Second, time.Second, 10*time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	return daemontest.Start(t, cfg, nil), dir
}

func chatBody(prompt string) string {
	return `{"model":"tiny","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"` + prompt + `"}]}`
}

// Issue 15: a worker that crashes, aborts, hangs after its first token or
// never produces one ends its streams with an in-band, retryable error and
// the protocol's terminator; the worker restarts and the next request is
// served; /health and the metrics count the restarts.
func TestWorkerFaultsEndTheirStreamsAndTheNextRequestIsServed(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	for i, tc := range []struct {
		marker, code string
		limit        time.Duration // the stream ends within this
	}{
		{"OVTEST_CRASH", "engine_crashed", 10 * time.Second},
		{"OVTEST_ABORT", "engine_crashed", 10 * time.Second},
		{"OVTEST_HANG", "engine_hung", time.Second + 3*time.Second},
		{"OVTEST_HANG_PREFILL", "engine_hung", time.Second + 3*time.Second},
	} {
		t.Run(tc.marker, func(t *testing.T) {
			start := time.Now()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody("tell me "+tc.marker)))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.HTTP.Do(req)
			require.NoError(t, err)
			if resp.StatusCode == http.StatusOK {
				text, codes, done := sse(t, resp)
				assert.Equal(t, []string{tc.code}, codes, "one error event (after %q)", text)
				assert.True(t, done, "then the terminator")
				if tc.marker != "OVTEST_HANG_PREFILL" {
					assert.NotEmpty(t, text, "the first token reached the client before the fault")
				}
			} else {
				// Nothing was streamed yet: the error is the HTTP answer.
				var body struct{ Error struct{ Code string } }
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				resp.Body.Close()
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				assert.Equal(t, tc.code, body.Error.Code)
				assert.NotEmpty(t, resp.Header.Get("Retry-After"), "retryable")
			}
			assert.Less(t, time.Since(start), tc.limit, "the fault was noticed in time")

			// The worker is restarted and the next request is served.
			resp2, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"are you back","stream":false,"options":{"num_predict":4}}`)
			require.Equal(t, http.StatusOK, resp2.StatusCode, "%s", raw)
			assert.Contains(t, string(raw), `"done":true`)

			h := daemontest.Health(t, c.HTTP, srv.URL)
			assert.EqualValues(t, i+1, h["worker_restarts"], "/health counts the restart")
			assert.EqualValues(t, 0, h["active_streams"], "no slot stays held")
		})
	}
	_, ps := c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(ps), `"restarts":4`, "/api/ps shows the model's restarts")
	_, status := c.Do(t, http.MethodGet, daemon.StatusPath, "")
	assert.Contains(t, string(status), `"worker_restarts":4`, "the console's status too")
	assert.Equal(t, "2", metric(t, c, `npud_worker_restarts_total{model="tiny",reason="crashed"}`))
	assert.Equal(t, "2", metric(t, c, `npud_worker_restarts_total{model="tiny",reason="hung"}`))
}

// Issue 15: the Ollama API ends a crashed stream with an error line.
func TestWorkerCrashOnTheOllamaAPI(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"OVTEST_CRASH please"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	last := lines[len(lines)-1]
	assert.Contains(t, last, `"error"`)
	assert.Contains(t, last, "crashed")
	assert.Greater(t, len(lines), 1, "tokens came before the error")
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"hello"}]}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
}

// Issue 15: a crash takes only its own model's streams: another model,
// in its own worker, keeps streaming.
func TestWorkerCrashLeavesOtherModelsAlone(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", func(c *daemon.Config) { c.SimSlots = 1 }, "tiny", "other")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"other","prompt":"load me","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"OVTEST_CRASH now","stream":false}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "crashed")
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"name":"other"`, "the other model's worker was not touched")
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"other","prompt":"still here","stream":false,"options":{"num_predict":2}}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
}

// Issue 15: under AUTO a worker that dies compiling a model on a device
// charges that device, and the model goes to the next one; an unhealthy
// device is avoided by later loads, and shows in /health and the metrics.
func TestWorkerCompileCrashFailsOverToTheNextDevice(t *testing.T) {
	srv, dir := startWorkers(t, "CPU,NPU", func(c *daemon.Config) {
		c.DeviceFailures, c.DeviceFailureWindow, c.DeviceProbeAfter = 1, time.Hour, time.Hour
	}, "tiny", "crashy")
	c := daemontest.NewClient(t, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crashy", "crash_on_load"), []byte("NPU"), 0o644))

	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"crashy","prompt":"x","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "served from the next device: %s", raw)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"device":"CPU"`)
	h := daemontest.Health(t, c.HTTP, srv.URL)
	assert.Contains(t, h["devices"], map[string]any{"name": "NPU", "healthy": false})
	assert.Contains(t, h["devices"], map[string]any{"name": "CPU", "healthy": true})
	assert.Equal(t, "0", metric(t, c, `npud_device_healthy{device="NPU"}`))

	// A model that would have gone to the NPU goes to the CPU now.
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"where","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.NotContains(t, string(raw), `"device":"NPU"`)
}

// Issue 15: a model that crashes every device is a clear error; an
// explicitly named device that crashed is never replaced: its requests
// fail with device_unhealthy until it is probed again.
func TestWorkerCompileCrashOnANamedDevice(t *testing.T) {
	srv, dir := startWorkers(t, "CPU,NPU", func(c *daemon.Config) {
		c.Device = "NPU"
		c.DeviceFailures, c.DeviceFailureWindow, c.DeviceProbeAfter = 1, time.Hour, time.Hour
	}, "crashy", "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crashy", "crash_on_load"), nil, 0o644))
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"crashy","prompt":"x","stream":false}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "while compiling it on NPU")
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "device_unhealthy")
	assert.Contains(t, string(raw), "device NPU is unhealthy")
}

// metric is one sample's value from /metrics.
func metric(t *testing.T, c *daemontest.Client, series string) string {
	t.Helper()
	_, raw := c.Do(t, http.MethodGet, "/metrics", "")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return "(no " + series + ")"
}

// Issue 15: the OOM killer's SIGKILL during a compile is a clear error.
func TestWorkerKilledWhileCompiling(t *testing.T) {
	srv, dir := startWorkers(t, "CPU", func(c *daemon.Config) { c.Device = "CPU" }, "big")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big", "kill_on_load"), nil, 0o644))
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "signal: killed")
	assert.Contains(t, string(raw), "engine_crashed")
}

// Issue 15: the simulated engine runs behind the same process boundary
// with --isolation process.
func TestSimulatedEngineInAWorker(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.Isolation = "sim", "process"
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"completion_tokens":5`)
	h := daemontest.Health(t, c.HTTP, srv.URL)
	assert.EqualValues(t, 0, h["worker_restarts"], "served through a worker")
	assert.Equal(t, true, h["simulated"])
}

// Issue 15: a worker never outlives its daemon, even one killed with
// SIGKILL (no drain, no cleanup).
func TestWorkersDieWithTheDaemon(t *testing.T) {
	bin := daemontest.BuildNPUD(t)
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	cmd := exec.CommandContext(t.Context(), bin, "serve", "--engine", "openvino", "--openvino-lib", daemontest.TestLibrary(t),
		"--models-dir", models, "--cache-dir", "", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "OVTEST_DEVICES=CPU")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), `msg="npud listening" addr=`); ok {
				addr <- strings.Fields(rest)[0]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("npud did not start")
	}
	// The worker is stuck in a native call that never returns (it cannot
	// notice its connection closing): only the kernel can end it.
	resp, err := daemontest.Post(t.Context(), nil, base+"/api/generate", "application/json", strings.NewReader(`{"model":"tiny","prompt":"OVTEST_HANG"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err, "the first token arrives before the hang")
	require.Contains(t, first, `"response"`)
	workers := daemontest.ChildProcesses(t, cmd.Process.Pid)
	require.NotEmpty(t, workers, "the model runs in a worker")
	require.NoError(t, cmd.Process.Kill()) // SIGKILL: nothing of npud's runs after it
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		for _, pid := range workers {
			if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
				return false // alive, and not a zombie waiting for its reaper
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "the workers %v outlived the daemon", workers)
}

// Issue 15: a device whose compiles fail (OVTEST_BROKEN_DEVICES: the
// compile returns an error, the worker lives) is skipped by AUTO in the
// worker; the model is served from the next device.
func TestWorkerBrokenDeviceFailsOver(t *testing.T) {
	t.Setenv("OVTEST_BROKEN_DEVICES", "NPU")
	srv, _ := startWorkers(t, "CPU,NPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"device":"CPU"`)
	assert.EqualValues(t, 0, daemontest.Health(t, c.HTTP, srv.URL)["worker_restarts"], "a failed compile is no crash")
}

// Issue 15: a request queued behind a generation whose worker hangs does
// not fail with it: it waits, and the restarted worker serves it.
func TestRequestsQueuedBehindAFaultWaitForTheRestart(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody("OVTEST_HANG here")))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = bufio.NewReader(resp.Body).ReadString('\n') // the first token: the worker now hangs
	require.NoError(t, err)

	queued := make(chan string, 1)
	go func() {
		_, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"after the hang","stream":false,"options":{"num_predict":3}}`)
		queued <- string(raw)
	}()
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, c.HTTP, srv.URL)["queued"] == 1.0 })
	select {
	case raw := <-queued:
		assert.Contains(t, raw, `"done":true`, "served by the restarted worker")
	case <-time.After(20 * time.Second):
		t.Fatal("the queued request was not served")
	}
	assert.EqualValues(t, 1, daemontest.Health(t, c.HTTP, srv.URL)["worker_restarts"])
}

// psModels lists the models /api/ps shows loaded.
func psModels(t *testing.T, c *daemontest.Client) []string {
	t.Helper()
	resp, raw := c.Do(t, http.MethodGet, "/api/ps", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var ps struct{ Models []struct{ Name string } }
	require.NoError(t, json.Unmarshal(raw, &ps))
	names := []string{}
	for _, m := range ps.Models {
		names = append(names, m.Name)
	}
	return names
}

// Issue 28: the lifecycle owns residency. A worker crash forgets the
// model: /api/ps no longer lists it until a request loads it again, and
// that load is a load like any (the load metrics count it), not a reload
// the worker engine did behind the lifecycle's back.
func TestWorkerCrashForgetsTheModelUntilARequestLoadsIt(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"load me","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	require.Equal(t, []string{"tiny"}, psModels(t, c))
	loads := func() float64 { return scrapeMetrics(t, srv.URL).sum("npud_model_load_seconds_count", "model", "tiny") }
	require.Equal(t, 1.0, loads())

	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"OVTEST_CRASH now","stream":false}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "crashed")
	assert.Empty(t, psModels(t, c), "a crashed worker's model is not loaded")

	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"are you back","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Equal(t, []string{"tiny"}, psModels(t, c))
	assert.Equal(t, 2.0, loads(), "the reload is a load the metrics count")
	assert.EqualValues(t, 1, daemontest.Health(t, c.HTTP, srv.URL)["worker_restarts"])
}

// Issue 28: a worker that dies while idle (killed: here SIGKILL, as the
// OOM killer sends) is noticed by the next request, which loads the model
// again through the lifecycle and is answered as if nothing had happened.
func TestWorkerKilledWhileIdleIsLoadedAgainByTheNextRequest(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"load me","stream":false,"options":{"num_predict":2}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	loads := func() float64 { return scrapeMetrics(t, srv.URL).sum("npud_model_load_seconds_count", "model", "tiny") }
	require.Equal(t, 1.0, loads())

	killTheWorker(t)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"tiny","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"still there?"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err = c.HTTP.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text, codes, done := sse(t, resp)
	assert.Empty(t, codes, "no error event")
	assert.True(t, done)
	assert.NotEmpty(t, text, "answered by the model loaded again")
	assert.Equal(t, 2.0, loads(), "loaded again through the lifecycle")
	assert.Equal(t, []string{"tiny"}, psModels(t, c))
	assert.EqualValues(t, 1, daemontest.Health(t, c.HTTP, srv.URL)["worker_restarts"], "the death counts as a restart")
	assert.Equal(t, "1", metric(t, c, `npud_worker_restarts_total{model="tiny",reason="crashed"}`))
}

// killTheWorker kills this test's one worker process with SIGKILL and
// waits until it is reaped (by the engine's cmd.Wait: the engine knows it
// is dead).
func killTheWorker(t *testing.T) {
	t.Helper()
	workers := workerProcesses(t)
	require.Len(t, workers, 1, "one worker, for the one model loaded")
	pid, err := strconv.Atoi(workers[0])
	require.NoError(t, err)
	worker, err := os.FindProcess(pid)
	require.NoError(t, err)
	require.NoError(t, worker.Kill())
	daemontest.Eventually(t, func() bool {
		_, err := os.Stat("/proc/" + workers[0])
		return errors.Is(err, fs.ErrNotExist)
	})
}

// workerProcesses lists this test process's worker children (npud worker).
func workerProcesses(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pid := range daemontest.ChildProcesses(t, os.Getpid()) {
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err == nil && strings.HasSuffix(string(cmdline), "\x00worker\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// Issue 28: embeddings find a worker that died idle the same way: the
// model is loaded again through the lifecycle and the embedding answered.
func TestEmbeddingAfterTheWorkerDiedIdle(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.Isolation, cfg.RestartBackoff = "sim", "process", 10*time.Millisecond
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)
	embed := `{"model":"sim","input":["one","two"]}`
	resp, raw := c.Do(t, http.MethodPost, "/api/embed", embed)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	loads := func() float64 { return scrapeMetrics(t, srv.URL).sum("npud_model_load_seconds_count", "model", "sim") }
	require.Equal(t, 1.0, loads())

	killTheWorker(t)

	resp, raw = c.Do(t, http.MethodPost, "/api/embed", embed)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"embeddings":[[`)
	assert.Equal(t, 2.0, loads(), "loaded again through the lifecycle")
	assert.EqualValues(t, 1, daemontest.Health(t, c.HTTP, srv.URL)["worker_restarts"])
}
