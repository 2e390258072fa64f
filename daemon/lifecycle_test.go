package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// running is a server started by the test itself, for tests that need its
// logs or control its Serve context.
type running struct {
	url    string
	logs   *syncBuffer
	cancel context.CancelFunc
	served chan error
	client *http.Client
}

func startServer(t *testing.T, mutate func(*daemon.Config), engine npu.Engine) *running {
	t.Helper()
	cfg := daemontest.Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	if engine == nil {
		engine = sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL})
	}
	logs := &syncBuffer{}
	srv, err := daemon.New(cfg, slog.New(slog.NewJSONHandler(logs, nil)), daemon.WithEngine(engine))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{url: "http://" + srv.Addr().String(), logs: logs, cancel: cancel, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(ctx) }()
	transport := &http.Transport{}
	r.client = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.served:
		case <-time.After(time.Minute):
			t.Error("server did not stop")
		}
		transport.CloseIdleConnections()
	})
	return r
}

func (r *running) health(t *testing.T) map[string]any {
	return daemontest.Health(t, r.client, r.url)
}

var waitFor = daemontest.Eventually

// stallFor makes requests whose only message is "stall" stall before their
// second token until cancelled.
func stallFor(content string) func(*npu.Request) sim.Fault {
	return func(r *npu.Request) sim.Fault {
		if len(r.Messages) > 0 && r.Messages[0].Content == content {
			return sim.Fault{StallAtToken: 2}
		}
		return sim.Fault{}
	}
}

func chat(content string, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"model":"sim","stream":true,"messages":[{"role":"user","content":"` + content + `"}]` + extra + `}`
}

// openStream starts a streaming request and returns its response once the
// headers arrived.
func openStream(t *testing.T, ctx context.Context, c *http.Client, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

func TestHealthReportsEngineQueueAndStreams(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) { c.Heartbeat = 20 * time.Millisecond },
		sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")}))
	h := r.health(t)
	assert.Equal(t, "ok", h["status"])
	assert.Contains(t, h["engine"], "sim")
	assert.Contains(t, h["engine"], "simulated")
	assert.Equal(t, true, h["simulated"])
	assert.Equal(t, []any{map[string]any{"id": "sim", "context_length": float64(32768)}}, h["models"])
	assert.Contains(t, h, "uptime_seconds")
	assert.EqualValues(t, 0, h["active_streams"])

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := openStream(t, ctx, r.client, r.url, chat("stall", ""))
	defer first.Body.Close()
	second := openStream(t, ctx, r.client, r.url, chat("stall", ""))
	defer second.Body.Close()
	waitFor(t, func() bool {
		h := r.health(t)
		return h["active_streams"] == float64(1) && h["queued"] == float64(1)
	})
	cancel()
	waitFor(t, func() bool {
		h := r.health(t)
		return h["active_streams"] == float64(0) && h["queued"] == float64(0)
	})
}

func TestAccessLogLine(t *testing.T) {
	r := startServer(t, nil, nil)
	resp, err := r.client.Post(r.url+"/v1/chat/completions", "application/json",
		strings.NewReader(chat("log me", `"max_tokens":3`)))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Request-ID")

	var line map[string]any
	waitFor(t, func() bool {
		for _, l := range r.logs.lines() {
			if l["msg"] == "request" && l["request_id"] == id {
				line = l
				return true
			}
		}
		return false
	})
	assert.Equal(t, "/v1/chat/completions", line["route"])
	assert.EqualValues(t, 200, line["status"])
	assert.Equal(t, "sim", line["model"])
	assert.EqualValues(t, 3, line["tokens_out"])
	assert.Equal(t, "length", line["finish_reason"])
	assert.Greater(t, line["ttft_ms"], 0.0)
	assert.GreaterOrEqual(t, line["duration_ms"], line["ttft_ms"])
}

func TestClientGoneWhileQueuedIsLogged499(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) { c.Heartbeat = 0 },
		sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")}))
	hogCtx, stopHog := context.WithCancel(context.Background())
	defer stopHog()
	go func() {
		req, _ := http.NewRequestWithContext(hogCtx, http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(chat("stall", "")))
		if resp, err := r.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitFor(t, func() bool { return r.health(t)["active_streams"] == float64(1) })

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(chat("queued", "")))
	req.Header.Set("X-Request-ID", "leaves-while-queued")
	errc := make(chan error, 1)
	go func() {
		resp, err := r.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, func() bool { return r.health(t)["queued"] == float64(1) })
	cancel()
	require.Error(t, <-errc)
	waitFor(t, func() bool { return r.health(t)["queued"] == float64(0) })
	waitFor(t, func() bool {
		for _, l := range r.logs.lines() {
			if l["request_id"] == "leaves-while-queued" {
				return l["status"] == float64(499)
			}
		}
		return false
	})
	stopHog()
}

func TestClientDisconnectMidStreamCancelsTheEngine(t *testing.T) {
	const itl = 20 * time.Millisecond
	engine := &daemontest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: itl})}
	r := startServer(t, nil, engine)
	ctx, cancel := context.WithCancel(context.Background())
	resp := openStream(t, ctx, r.client, r.url, chat("long answer", ""))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"content":"`+`X`) {
		if strings.Contains(sc.Text(), `"delta":{"content"`) {
			break // the first content chunk arrived
		}
	}
	cancel()
	resp.Body.Close()
	cancelledAt := len(engine.Statuses())
	waitFor(t, func() bool { return r.health(t)["active_streams"] == float64(0) })
	statuses := engine.Statuses()
	require.NotEmpty(t, statuses)
	assert.Equal(t, npu.Cancel, statuses[len(statuses)-1], "the engine was told to cancel")
	// The sim calls the sink once more after Cancel (the flush), so at most
	// one token plus the flush come after the disconnect.
	assert.LessOrEqual(t, len(statuses)-cancelledAt, 3, "the engine saw Cancel within a token interval")
	assert.Less(t, len(statuses), len(sim.Tokens(0, "user: long answer\n")), "the engine stopped before the end")

	// The slot serves the next request.
	resp2, err := r.client.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(chat("next", `"max_tokens":2`)))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	assert.True(t, bytes.HasSuffix(body, []byte("data: [DONE]\n\n")))
}

// readStream reads a whole SSE response.
func readStream(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestDrainLetsInFlightStreamsFinish(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) {
		c.SimITL = 10 * time.Millisecond
		c.DrainTimeout = 20 * time.Second
	}, nil)
	resp := openStream(t, context.Background(), r.client, r.url, chat("drain", ""))
	r.cancel() // as SIGTERM does
	body := readStream(t, resp)
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), "the stream completed")
	assert.Contains(t, body, `"finish_reason":"stop"`)
	assert.NotContains(t, body, `"error"`)
	select {
	case err := <-r.served:
		require.NoError(t, err)
		r.served <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	_, err := net.DialTimeout("tcp", strings.TrimPrefix(r.url, "http://"), time.Second)
	assert.Error(t, err, "no new connections after the drain")
}

func TestDrainTimeoutEndsStreamsWithAnErrorEvent(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) {
		c.DrainTimeout = 200 * time.Millisecond
		c.Heartbeat = 20 * time.Millisecond
	}, sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")}))
	resp := openStream(t, context.Background(), r.client, r.url, chat("stall", ""))
	r.cancel()
	body := readStream(t, resp)
	assert.Contains(t, body, `"code":"shutting_down"`)
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), "the error event is followed by [DONE]")
	select {
	case err := <-r.served:
		require.NoError(t, err)
		r.served <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// buildBinary builds npud once for the signal tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "npud")
	cmd := exec.Command("go", "build", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

var listeningAddr = regexp.MustCompile(`msg="npud listening" addr=(\S+)`)

// startBinary runs `npud serve` and returns the process, its address, and
// a function that waits for it to exit.
func startBinary(t *testing.T, bin string, args ...string) (*exec.Cmd, string, func() (int, string)) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var logs strings.Builder
	addrc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatal("npud did not start")
	}
	wait := func() (int, string) {
		<-done
		err := cmd.Wait()
		code := 0
		if exitErr, ok := err.(*exec.ExitError); ok {
			code = exitErr.ExitCode()
		}
		return code, logs.String()
	}
	return cmd, addr, wait
}

func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	cmd, addr, wait := startBinary(t, bin, "--sim-itl", "20ms", "--sim-ttft", "1ms")
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	resp := openStream(t, context.Background(), client, "http://"+addr, chat("sigterm", `"max_tokens":30`))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	body := readStream(t, resp)
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"))
	assert.Contains(t, body, `"finish_reason":"length"`, "the stream ran to its end during the drain")
	code, logs := wait()
	assert.Equal(t, 0, code, "logs:\n%s", logs)
	assert.Contains(t, logs, "draining")
	assert.Contains(t, logs, "stopped")

	cmd2, _, wait2 := startBinary(t, bin)
	require.NoError(t, cmd2.Process.Signal(syscall.SIGINT))
	code, logs = wait2()
	assert.Equal(t, 0, code, "idle SIGINT exits 0; logs:\n%s", logs)
}

// TestServeReturnsWithTheListenerClosed: even when the drain starts before
// the HTTP server did, Serve returns only once the listener is closed.
func TestServeReturnsWithTheListenerClosed(t *testing.T) {
	for range 50 {
		srv, err := daemon.New(daemontest.Defaults(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, srv.Serve(ctx))
		if c, err := net.DialTimeout("tcp", srv.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Fatal("the listener is still open after Serve returned")
		}
	}
}
