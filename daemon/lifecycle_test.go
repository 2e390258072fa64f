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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		simBinary.Remove()
		os.Exit(code)
	}))
}

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

// lines decodes the JSON log lines written so far.
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

// accessLines returns the access-log lines of request id.
func (b *syncBuffer) accessLines(id string) []map[string]any {
	var out []map[string]any
	for _, l := range b.lines() {
		if l["msg"] == "request" && l["request_id"] == id {
			out = append(out, l)
		}
	}
	return out
}

// running is a server started by the test itself, for tests that need its
// logs or control its Serve context.
type running struct {
	url    string
	addr   string
	logs   *syncBuffer
	cancel context.CancelFunc // as SIGTERM does
	client *http.Client

	served   chan error
	stopOnce sync.Once
	stopErr  error
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
	srv, err := daemon.New(cfg, daemon.NewLogger("json", nil, logs), daemon.WithEngine(engine))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{url: "http://" + srv.Addr().String(), addr: srv.Addr().String(), logs: logs, cancel: cancel, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(ctx) }()
	transport := &http.Transport{DisableCompression: true}
	r.client = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	t.Cleanup(func() {
		assert.NoError(t, r.stop(time.Minute), "Serve")
		transport.CloseIdleConnections()
	})
	return r
}

// stop cancels the Serve context and returns what Serve returned, waiting
// at most within; later calls return the same.
func (r *running) stop(within time.Duration) error {
	r.cancel()
	r.stopOnce.Do(func() {
		select {
		case r.stopErr = <-r.served:
		case <-time.After(within):
			r.stopErr = context.DeadlineExceeded
		}
	})
	return r.stopErr
}

// serveDone reports whether Serve has returned, without waiting.
func (r *running) serveDone() bool {
	select {
	case err := <-r.served:
		r.served <- err
		return true
	default:
		return false
	}
}

func (r *running) health(t *testing.T) map[string]any {
	return daemontest.Health(t, r.client, r.url)
}

var waitFor = daemontest.Eventually

// stallFor makes requests whose only message is content stall before their
// second token until they are abandoned.
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

// openStream starts a streaming chat request and returns its response once
// the headers arrived (the server commits them with the first event).
func openStream(t *testing.T, ctx context.Context, c *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return resp
}

// frame is one server-sent event (its lines joined) and when it arrived.
type frame struct {
	text string
	at   time.Time
}

// frames reads r's SSE frames in the background until EOF or an error.
func frames(r io.Reader) <-chan frame {
	out := make(chan frame, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		var lines []string
		for sc.Scan() {
			if sc.Text() != "" {
				lines = append(lines, sc.Text())
				continue
			}
			if len(lines) > 0 {
				out <- frame{strings.Join(lines, "\n"), time.Now()}
				lines = nil
			}
		}
	}()
	return out
}

// untilContent takes frames up to and including the first with text.
func untilContent(t *testing.T, ch <-chan frame) []frame {
	t.Helper()
	var got []frame
	for f := range ch {
		got = append(got, f)
		if content(f) != "" {
			return got
		}
	}
	t.Fatalf("the stream ended before any text: %v", got)
	return nil
}

// chunk decodes a `data: {...}` frame; ok is false for anything else.
func chunk(f frame) (m map[string]any, ok bool) {
	data, found := strings.CutPrefix(f.text, "data: ")
	if !found || data == "[DONE]" {
		return nil, false
	}
	return m, json.Unmarshal([]byte(data), &m) == nil
}

// content is the text delta of a chat chunk, or "".
func content(f frame) string {
	m, ok := chunk(f)
	if !ok {
		return ""
	}
	choices, _ := m["choices"].([]any)
	if len(choices) == 0 {
		return ""
	}
	delta, _ := choices[0].(map[string]any)["delta"].(map[string]any)
	s, _ := delta["content"].(string)
	return s
}

// finishReason is the finish_reason of a chat chunk, or "".
func finishReason(f frame) string {
	m, ok := chunk(f)
	if !ok {
		return ""
	}
	choices, _ := m["choices"].([]any)
	if len(choices) == 0 {
		return ""
	}
	s, _ := choices[0].(map[string]any)["finish_reason"].(string)
	return s
}

func collect(ch <-chan frame) []frame {
	var all []frame
	for f := range ch {
		all = append(all, f)
	}
	return all
}

func texts(fs []frame) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(content(f))
	}
	return b.String()
}

// refused reports whether a new TCP connection to addr is refused.
func refused(addr string) bool {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", addr)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func TestHealthReportsEngineAndModels(t *testing.T) {
	r := startServer(t, nil, nil)
	resp, err := daemontest.Get(t.Context(), r.client, r.url+"/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	var h map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))

	checks := []struct {
		field string
		check func(t *testing.T, v any)
	}{
		{"status", func(t *testing.T, v any) { assert.Equal(t, "ok", v) }},
		{"engine", func(t *testing.T, v any) {
			assert.Contains(t, v, "sim")
			assert.Contains(t, v, "simulated", "the report says the engine is simulated")
		}},
		{"simulated", func(t *testing.T, v any) { assert.Equal(t, true, v) }},
		{"models", func(t *testing.T, v any) {
			assert.Equal(t, []any{map[string]any{"id": "sim", "context_length": float64(32768)}}, v)
		}},
		{"active_streams", func(t *testing.T, v any) { assert.Equal(t, float64(0), v) }},
		{"queued", func(t *testing.T, v any) { assert.Equal(t, float64(0), v) }},
		{"uptime_seconds", func(t *testing.T, v any) {
			require.IsType(t, float64(0), v)
			assert.GreaterOrEqual(t, v.(float64), 0.0)
			assert.Less(t, v.(float64), 60.0)
		}},
		{"version", func(t *testing.T, v any) { assert.Equal(t, daemon.Version, v) }},
	}
	for _, c := range checks {
		t.Run(c.field, func(t *testing.T) {
			require.Contains(t, h, c.field)
			c.check(t, h[c.field])
		})
	}
}

func TestHealthCountsRunningAndQueuedRequests(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) { c.Heartbeat = 20 * time.Millisecond },
		sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := openStream(t, ctx, r.client, r.url, chat("stall", ""))
	defer first.Body.Close()
	h := r.health(t)
	assert.Equal(t, float64(1), h["active_streams"], "the stalled request holds the engine")
	assert.Equal(t, float64(0), h["queued"], "nothing waits yet")
	// The second waits behind the stalled first; heartbeats commit its 200.
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
	tests := []struct {
		name, method, path, body string
		want                     map[string]any // fields with exact values
		ttft                     bool           // ttft_ms > 0
		hasError                 bool
	}{
		{"streamed chat", http.MethodPost, "/v1/chat/completions", chat("log me", `"max_tokens":3`),
			map[string]any{"route": "/v1/chat/completions", "status": 200.0, "model": "sim", "tokens_out": 3.0,
				"finish_reason": "length", "method": "POST", "level": "INFO"}, true, false},
		{"whole completion", http.MethodPost, "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":2}`,
			map[string]any{"route": "/v1/completions", "status": 200.0, "model": "sim", "tokens_out": 2.0,
				"finish_reason": "length"}, true, false},
		{"ollama stream", http.MethodPost, "/api/generate", `{"model":"sim","prompt":"hi","options":{"num_predict":4}}`,
			map[string]any{"route": "/api/generate", "status": 200.0, "model": "sim", "tokens_out": 4.0,
				"finish_reason": "length"}, true, false},
		{"unknown model", http.MethodPost, "/v1/chat/completions", `{"model":"nope","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			map[string]any{"status": 404.0, "model": "nope", "tokens_out": 0.0, "finish_reason": "", "ttft_ms": 0.0, "level": "INFO"}, false, true},
		{"health", http.MethodGet, "/health", "",
			map[string]any{"route": "/health", "status": 200.0, "model": "", "tokens_out": 0.0}, false, false},
		{"unknown path", http.MethodGet, "/v1/nothing/here", "",
			map[string]any{"route": "/v1/nothing/here", "status": 404.0}, false, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "access-log-" + string(rune('a'+i))
			req, err := http.NewRequestWithContext(t.Context(), tc.method, r.url+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("X-Request-ID", id)
			resp, err := r.client.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, id, resp.Header.Get("X-Request-ID"))

			// The line is written after the handler returned, which may be
			// just after the client saw the end of the body.
			waitFor(t, func() bool { return len(r.logs.accessLines(id)) > 0 })
			lines := r.logs.accessLines(id)
			require.Len(t, lines, 1, "one line per request")
			line := lines[0]
			for _, field := range []string{"request_id", "method", "route", "status", "model", "ttft_ms",
				"tokens_out", "finish_reason", "duration_ms"} {
				assert.Contains(t, line, field)
			}
			for k, v := range tc.want {
				assert.Equal(t, v, line[k], k)
			}
			require.IsType(t, 0.0, line["ttft_ms"])
			require.IsType(t, 0.0, line["duration_ms"])
			if tc.ttft {
				assert.Greater(t, line["ttft_ms"], 0.0)
			}
			assert.Greater(t, line["duration_ms"], 0.0)
			assert.GreaterOrEqual(t, line["duration_ms"], line["ttft_ms"])
			if tc.hasError {
				assert.NotEmpty(t, line["error"])
			} else {
				assert.NotContains(t, line, "error")
			}
		})
	}
}

func TestClientGoneWhileQueuedIsLogged499(t *testing.T) {
	r := startServer(t, func(c *daemon.Config) { c.Heartbeat = 0 },
		sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")}))
	hogCtx, stopHog := context.WithCancel(context.Background())
	defer stopHog()
	hog := openStream(t, hogCtx, r.client, r.url, chat("stall", ""))
	defer hog.Body.Close()
	waitFor(t, func() bool { return r.health(t)["active_streams"] == float64(1) })

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(chat("queued", "")))
	require.NoError(t, err)
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
	require.ErrorIs(t, <-errc, context.Canceled, "no response had begun")
	waitFor(t, func() bool { return len(r.logs.accessLines("leaves-while-queued")) > 0 })
	lines := r.logs.accessLines("leaves-while-queued")
	require.Len(t, lines, 1)
	assert.Equal(t, float64(499), lines[0]["status"])
	assert.Equal(t, "/v1/chat/completions", lines[0]["route"])
	assert.Equal(t, "sim", lines[0]["model"])
	assert.NotEmpty(t, lines[0]["error"])
	assert.Equal(t, float64(0), r.health(t)["queued"])
	assert.Equal(t, float64(1), r.health(t)["active_streams"], "the running request is untouched")
}

func TestClientDisconnectMidStreamCancelsTheEngine(t *testing.T) {
	engine := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: 20 * time.Millisecond})}
	r := startServer(t, nil, engine)
	ctx, cancel := context.WithCancel(context.Background())
	resp := openStream(t, ctx, r.client, r.url, chat("long answer", ""))
	untilContent(t, frames(resp.Body))
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
	resp2 := openStream(t, context.Background(), r.client, r.url, chat("next", `"max_tokens":2`))
	all := collect(frames(resp2.Body))
	resp2.Body.Close()
	require.NotEmpty(t, all)
	assert.Equal(t, "data: [DONE]", all[len(all)-1].text)
}

func TestDrainLetsInFlightStreamsFinish(t *testing.T) {
	const drainTimeout = 20 * time.Second
	r := startServer(t, func(c *daemon.Config) {
		c.SimITL = 20 * time.Millisecond
		c.DrainTimeout = drainTimeout
	}, nil)
	const prompt = "user: drain\n" // what the simulated model reads
	want := sim.Tokens(0, prompt)
	require.GreaterOrEqual(t, len(want), 32, "the answer outlasts the checks below (32 tokens × 20 ms)")

	resp := openStream(t, context.Background(), r.client, r.url, chat("drain", ""))
	defer resp.Body.Close()
	ch := frames(resp.Body)
	before := untilContent(t, ch)
	cancelled := time.Now()
	r.cancel() // as SIGTERM does

	// The listener closes at once while the stream goes on.
	waitFor(t, func() bool { return refused(r.addr) })
	refusedAt := time.Now()
	assert.False(t, r.serveDone(), "Serve waits for the open stream")

	after := collect(ch)
	require.NotEmpty(t, after)
	assert.Equal(t, "data: [DONE]", after[len(after)-1].text, "the stream ended normally")
	require.GreaterOrEqual(t, len(after), 2)
	assert.Equal(t, "stop", finishReason(after[len(after)-2]), "the finish chunk precedes [DONE]")
	assert.Equal(t, sim.Text(0, prompt), texts(before)+texts(after), "the whole answer arrived")
	for _, f := range after {
		assert.NotContains(t, f.text, `"error"`)
	}
	var textAfterRefusal int
	for _, f := range after {
		if content(f) != "" && f.at.After(refusedAt) {
			textAfterRefusal++
		}
	}
	assert.Greater(t, textAfterRefusal, 0, "text kept coming after the listener closed")
	ended := after[len(after)-1].at
	assert.Less(t, ended.Sub(cancelled), drainTimeout, "the stream finished within the drain timeout")

	require.NoError(t, r.stop(10*time.Second), "Serve returns nil after a clean drain")
	assert.True(t, refused(r.addr), "no new connections after the drain")
}

func TestDrainTimeoutEndsStreamsWithAnErrorEvent(t *testing.T) {
	const drainTimeout = 200 * time.Millisecond
	engine := &nputest.RecordingEngine{Engine: sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Faults: stallFor("stall")})}
	r := startServer(t, func(c *daemon.Config) {
		c.DrainTimeout = drainTimeout
		c.Heartbeat = 0
	}, engine)
	resp := openStream(t, context.Background(), r.client, r.url, chat("stall", ""))
	defer resp.Body.Close()
	ch := frames(resp.Body)
	untilContent(t, ch)

	// A second request waits behind the stalled one; no byte of its
	// response has been sent.
	type answer struct {
		status int
		header http.Header
		body   []byte
		err    error
	}
	queued := make(chan answer, 1)
	go func() {
		resp, err := daemontest.Post(t.Context(), r.client, r.url+"/v1/chat/completions", "application/json", strings.NewReader(chat("queued", "")))
		if err != nil {
			queued <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		queued <- answer{resp.StatusCode, resp.Header, body, err}
	}()
	waitFor(t, func() bool { return r.health(t)["queued"] == float64(1) })

	cancelled := time.Now()
	r.cancel()
	after := collect(ch)
	require.GreaterOrEqual(t, len(after), 2, "%v", after)
	last, errFrame := after[len(after)-1], after[len(after)-2]
	assert.Equal(t, "data: [DONE]", last.text, "the error event is followed by [DONE]")
	m, ok := chunk(errFrame)
	require.True(t, ok, "an in-band error event: %q", errFrame.text)
	require.Contains(t, m, "error", "%q", errFrame.text)
	e := m["error"].(map[string]any)
	assert.Equal(t, "shutting_down", e["code"])
	assert.Equal(t, "server_error", e["type"])
	assert.NotEmpty(t, e["message"])
	assert.GreaterOrEqual(t, errFrame.at.Sub(cancelled), drainTimeout, "streams had the drain timeout to finish")

	a := <-queued
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "the queued request never began: a real HTTP error")
	assert.NotEmpty(t, a.header.Get("Retry-After"))
	assert.Contains(t, string(a.body), `"code":"shutting_down"`)

	require.NoError(t, r.stop(20*time.Second), "an expired drain is still a clean stop")
	statuses := engine.Statuses()
	require.NotEmpty(t, statuses)
	assert.Equal(t, npu.Cancel, statuses[len(statuses)-1], "the engine was told to cancel")
	assert.True(t, refused(r.addr))
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
		if !refused(srv.Addr().String()) {
			t.Fatal("the listener is still open after Serve returned")
		}
	}
}

// Issue 17: the access log said tokens_out 0 for a client that left
// mid-stream; it counts what the client received.
func TestAccessLogCountsWhatAnAbortedClientReceived(t *testing.T) {
	r := startServer(t, nil, sim.New(sim.Config{TTFT: time.Millisecond, ITL: 20 * time.Millisecond}))
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	resp := openStream(t, ctx, r.client, r.url, chat("tell me a long story about the sea", `"max_tokens":200`), "X-Request-ID", "aborted-reader")
	reader := bufio.NewReader(resp.Body)
	var chunks int
	for chunks < 5 {
		line, err := reader.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "data: {") && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
			chunks++
		}
	}
	leave()
	resp.Body.Close()
	waitFor(t, func() bool { return len(r.logs.accessLines("aborted-reader")) > 0 })
	line := r.logs.accessLines("aborted-reader")[0]
	assert.GreaterOrEqual(t, line["tokens_out"], 5.0, "the tokens the client read")
	assert.Less(t, line["tokens_out"], 200.0, "not the whole answer")
}

// Issue 17: text logs give durations as people read them; JSON logs keep
// milliseconds for machines.
func TestLogDurations(t *testing.T) {
	for _, tc := range []struct {
		format string
		d      time.Duration
		want   string
	}{
		{"text", 0, "took=0s"},
		{"text", 1234567 * time.Nanosecond, "took=1.2ms"},
		{"text", 412345678 * time.Nanosecond, "took=412.3ms"},
		{"text", 3214567890 * time.Nanosecond, "took=3.21s"},
		{"text", 125*time.Second + 400*time.Millisecond, "took=2m5s"},
		{"text", 850 * time.Nanosecond, "took=850ns"},
		{"json", 412345678 * time.Nanosecond, `"took_ms":412.345678`},
	} {
		var out bytes.Buffer
		daemon.NewLogger(tc.format, nil, &out).Info("x", "took", tc.d)
		assert.Contains(t, out.String(), tc.want, "%s %v", tc.format, tc.d)
	}
}
