package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// SIGHUP re-reads the file: keys, limits and the log level change at once,
// a listener change is reported as needing a restart, and a broken file
// leaves the running configuration in place.
func TestSIGHUPReloadsTheConfiguration(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "npud.toml")
	write := func(text string) { require.NoError(t, os.WriteFile(conf, []byte(text), 0o600)) }
	write("sim-ttft = \"1ms\"\nsim-itl = \"1ms\"\n")
	p := startBinary(t, bin, "--config", conf)
	defer func() {
		p.signal(t, syscall.SIGTERM)
		p.wait(t, 30*time.Second)
	}()
	c := daemontest.NewClient(t, "http://"+p.addr)
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	require.Equal(t, 200, resp.StatusCode, "no keys yet: %s", raw)

	write("sim-ttft = \"1ms\"\nsim-itl = \"1ms\"\napi-key = [\"alice:sk-alice-0123456789\"]\nlog-level = \"debug\"\nrate-limit = 60\nmax-queue = 3\n")
	p.signal(t, syscall.SIGHUP)
	// Both lines come through the log pipe; wait for the second too.
	daemontest.Eventually(t, func() bool {
		return strings.Contains(p.log(), "configuration reloaded") && strings.Contains(p.log(), "need a restart were not applied")
	})
	logs := p.log()
	// Changes are named by their configuration keys, as operators write them.
	assert.Contains(t, logs, "api-key")
	assert.Contains(t, logs, "log-level")
	assert.Contains(t, logs, "rate-limit")
	assert.Contains(t, logs, "api_keys_added=1")
	assert.Regexp(t, `need a restart were not applied.*max-queue`, logs)
	assert.NotContains(t, logs, "APIKeys", "no Go field names")
	assert.NotContains(t, logs, "sk-alice", "keys never reach the log")

	resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the new key is required now: %s", raw)
	resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer sk-alice-0123456789")
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
	// Debug logging is on now: an unknown Ollama option is logged at debug.
	resp, raw = c.Do(t, "POST", "/api/generate", `{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":1,"mirostat_x":1}}`,
		"Authorization", "Bearer sk-alice-0123456789")
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	daemontest.Eventually(t, func() bool { return strings.Contains(p.log(), "ignoring unknown option") })

	// A broken file is refused; the keys stay.
	write("api-key = [\"broken\"]\n")
	p.signal(t, syscall.SIGHUP)
	daemontest.Eventually(t, func() bool { return strings.Contains(p.log(), "configuration not reloaded") })
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer sk-alice-0123456789")
	assert.Equal(t, 200, resp.StatusCode)

	// A file that lost its keys does not switch authentication off.
	write("sim-ttft = \"1ms\"\nsim-itl = \"1ms\"\n")
	p.signal(t, syscall.SIGHUP)
	daemontest.Eventually(t, func() bool { return strings.Count(p.log(), "configuration not reloaded") == 2 })
	assert.Contains(t, p.log(), "no API key while 1 are in use")
	resp, _ = c.Do(t, "GET", "/admin/models", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "admin stays closed")
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "keys stay required")

	// Switching it off is possible, in so many words.
	write("sim-ttft = \"1ms\"\nsim-itl = \"1ms\"\nno-auth = true\n")
	p.signal(t, syscall.SIGHUP)
	daemontest.Eventually(t, func() bool { return strings.Count(p.log(), "configuration reloaded") == 2 })
	resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode, "%s", raw)
}

// Issue 12, item 1: a key file with no key is an error at start and on
// reload (the running keys stay), never authentication switched off.
func TestEmptyKeyFileFailsClosed(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(empty, []byte("# nobody yet\n\n"), 0o600))

	cfg := daemontest.Defaults(t)
	cfg.APIKeyFile = empty
	require.ErrorContains(t, cfg.Validate(), "holds no API key")
	_, err := daemon.New(cfg, discardLogger())
	require.ErrorContains(t, err, "holds no API key", "the daemon does not start")

	full := filepath.Join(dir, "keys-full")
	require.NoError(t, os.WriteFile(full, []byte("alice:sk-alice-0123456789\nbob:sk-bob-0123456789:admin\n"), 0o600))
	cfg.APIKeyFile = full
	srv, err := daemon.New(cfg, discardLogger())
	require.NoError(t, err)
	c := serveInBackground(t, srv)

	// Cut short: the file exists but holds only a comment now.
	require.NoError(t, os.WriteFile(full, []byte("# truncated\n"), 0o600))
	require.ErrorContains(t, srv.Reload(cfg), "holds no API key")
	// The key list removed altogether: refused too.
	noKeys := cfg
	noKeys.APIKeyFile = ""
	require.ErrorContains(t, srv.Reload(noKeys), "no API key while 2 are in use")
	resp, _ := c.Do(t, "GET", "/admin/models", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer sk-alice-0123456789")
	assert.Equal(t, 200, resp.StatusCode, "the running keys stay")

	noKeys.NoAuth = true
	require.NoError(t, srv.Reload(noKeys))
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode, "switched off explicitly")
}

func TestReloadKeepsCountsAndAppliesLimits(t *testing.T) {
	cfg := daemontest.Defaults(t)
	srv, err := daemon.New(cfg, discardLogger())
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	for range 3 {
		resp, _ := c.Do(t, "POST", "/v1/chat/completions", tinyChat)
		require.Equal(t, 200, resp.StatusCode)
	}
	next := cfg
	next.RateLimit, next.RateBurst = 1, 1
	next.CORSOrigins = []string{"https://app.example"}
	require.NoError(t, srv.Reload(next))
	resp, _ := c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode)
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the new rate applies at once")
	resp, _ = c.Do(t, "GET", "/health", "", "Origin", "https://app.example")
	assert.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))

	bad := cfg
	bad.APIKeyFile = filepath.Join(t.TempDir(), "missing")
	require.ErrorIs(t, srv.Reload(bad), os.ErrNotExist)
	resp, _ = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a failed reload changes nothing")
}

// Admin reload waits for the model's running stream to finish (nothing is
// cut off), then swaps; a failing new instance leaves the old one serving.
func TestAdminReloadDrainsAndSurvivesAFailure(t *testing.T) {
	var mu sync.Mutex
	var reloadErr error
	cfg := daemontest.Defaults(t)
	cfg.SimITL = 5 * time.Millisecond
	cfg.DrainTimeout = 5 * time.Second
	engine := sim.New(sim.Config{TTFT: time.Millisecond, ITL: cfg.SimITL, ReloadFault: func(string) error {
		mu.Lock()
		defer mu.Unlock()
		return reloadErr
	}})
	srv := daemontest.Start(t, cfg, engine)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, "POST", "/api/generate", `{"model":"sim","prompt":"load me","stream":false,"options":{"num_predict":1}}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)

	// A stream of 100 tokens × 5 ms is running when the reload arrives.
	streamDone := make(chan string, 1)
	go func() {
		_, raw := c.Do(t, "POST", "/v1/chat/completions", `{"model":"sim","stream":true,"messages":[{"role":"user","content":"long"}],"max_tokens":100}`)
		streamDone <- string(raw)
	}()
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, http.DefaultClient, srv.URL)["active_streams"] == 1.0 })
	start := time.Now()
	resp, raw = c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	var body struct{ Status, Model, Device string }
	require.NoError(t, json.Unmarshal(raw, &body))
	assert.Equal(t, "reloaded", body.Status)
	assert.Equal(t, "simulated", body.Device)
	assert.Greater(t, time.Since(start), 200*time.Millisecond, "the reload waited for the stream (about 500 ms of tokens)")
	select {
	case text := <-streamDone:
		assert.Contains(t, text, `"finish_reason":"length"`, "the running stream finished whole")
		assert.Contains(t, text, "data: [DONE]")
		assert.NotContains(t, text, `"error"`)
	case <-time.After(5 * time.Second):
		t.Fatal("the running stream did not end")
	}

	mu.Lock()
	reloadErr = errors.New("weights file is truncated")
	mu.Unlock()
	resp, raw = c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", raw)
	msg, code := openAIError(t, raw)
	assert.Equal(t, "reload_failed", code)
	assert.Contains(t, msg, "weights file is truncated")
	assert.Contains(t, msg, "keeps serving")
	resp, raw = c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	assert.Equal(t, 200, resp.StatusCode, "the old instance still serves: %s", raw)

	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"model":"nope"}`, 404, "model_not_found"},
		{`{}`, 400, "missing_model"},
		{`{"model":`, 400, ""},
	} {
		resp, raw := c.Do(t, "POST", "/admin/reload", tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.body, raw)
		if tc.code != "" {
			_, code := openAIError(t, raw)
			assert.Equal(t, tc.code, code)
		}
	}
}

func TestAdminReloadDrainTimeout(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.SimITL = 50 * time.Millisecond
	cfg.DrainTimeout = 100 * time.Millisecond
	srv := daemontest.StartSim(t, func(c *daemon.Config) { *c = cfg }, nil)
	c := daemontest.NewClient(t, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/generate", strings.NewReader(`{"model":"sim","prompt":"long","options":{"num_predict":1000}}`))
	require.NoError(t, err)
	long, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer long.Body.Close()
	resp, raw := c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	msg, code := openAIError(t, raw)
	assert.Equal(t, "drain_timeout", code)
	assert.Contains(t, msg, "nothing was reloaded")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serveInBackground serves srv until the test ends, then checks that it
// drained cleanly, and returns a client of it.
func serveInBackground(t *testing.T, srv *daemon.Server) *daemontest.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return daemontest.NewClient(t, "http://"+srv.Addr().String())
}

// Issue 12, item 9: the WebSocket message limit was fixed at start; it
// follows a reloaded body limit, as HTTP bodies do.
func TestReloadedBodyLimitAppliesToWebSocketMessages(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.MaxBodyBytes = 64 << 10
	srv, err := daemon.New(cfg, discardLogger())
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	next := cfg
	next.MaxBodyBytes = 1 << 10
	require.NoError(t, srv.Reload(next))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(c.URL, "http://", "ws://", 1)+"/npud/v1/streams", nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	big := `{"type":"ping","id":"` + strings.Repeat("x", 4<<10) + `"}`
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(big)))
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), "%v", err)
}

// Issue 12, item 4: revoking a key left its open WebSockets working. A
// reload that removes a key closes them with 1008; other keys' stay.
func TestRevokedKeyClosesItsWebSockets(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789ab"}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, bob}
	srv, err := daemon.New(cfg, discardLogger())
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	dial := func(key string) *websocket.Conn {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, strings.Replace(c.URL, "http://", "ws://", 1)+"/npud/v1/streams",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		require.NoError(t, err)
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}
	aliceWS, bobWS := dial(alice.Key), dial(bob.Key)
	// A ping answered means the server holds the connection (the dial
	// returns as soon as the upgrade is done, maybe before that).
	for _, conn := range []*websocket.Conn{aliceWS, bobWS} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":"ready"}`)))
		_, _, err := conn.Read(ctx)
		cancel()
		require.NoError(t, err)
	}

	next := cfg
	next.APIKeys = []daemon.APIKey{bob}
	require.NoError(t, srv.Reload(next))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err = aliceWS.Read(ctx)
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "%v", err)
	require.NoError(t, bobWS.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":"still-here"}`)))
	_, data, err := bobWS.Read(ctx)
	require.NoError(t, err, "bob's key was not revoked")
	assert.Contains(t, string(data), "still-here")
}

// Issue 25 item 10: revoking a key ends its HTTP streams too (OpenAI's SSE
// and Ollama's NDJSON, resumable ones included): each gets an in-band
// key_revoked error and its terminator, and its generation stops; another
// key's stream runs on.
func TestRevokedKeyEndsItsStreams(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789ab"}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, bob}
	cfg.SimSlots = 8
	// Streams that last seconds: the simulated answer's tokens, 100 ms apart.
	engine := sim.New(sim.Config{TTFT: time.Millisecond, ITL: 100 * time.Millisecond})
	srv, err := daemon.New(cfg, discardLogger(), daemon.WithEngine(engine))
	require.NoError(t, err)
	c := serveInBackground(t, srv)

	type open struct {
		name  string
		lines *bufio.Scanner
		body  io.Closer
	}
	start := func(key, path, body string, header http.Header) open {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return open{name: path, lines: bufio.NewScanner(resp.Body), body: resp.Body}
	}
	const chat = `{"model":"sim","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"hi"}]}`
	streams := []open{
		start(alice.Key, "/v1/chat/completions", chat, nil),
		start(alice.Key, "/v1/chat/completions", chat, http.Header{"Idempotency-Key": {"alice-1"}, "X-Npud-Resumable": {"true"}}),
		start(alice.Key, "/api/chat", `{"model":"sim","options":{"num_predict":2000},"messages":[{"role":"user","content":"hi"}]}`, nil),
	}
	bobs := start(bob.Key, "/v1/chat/completions", chat, nil)
	for _, s := range append(streams, bobs) {
		require.True(t, s.lines.Scan(), "%s: a first line", s.name)
	}

	next := cfg
	next.APIKeys = []daemon.APIKey{bob}
	require.NoError(t, srv.Reload(next))

	for _, s := range streams {
		var last []string
		for s.lines.Scan() {
			if line := s.lines.Text(); line != "" {
				last = append(last, line)
			}
		}
		require.NoError(t, s.lines.Err(), s.name)
		require.NotEmpty(t, last, s.name)
		if strings.HasPrefix(s.name, "/v1/") {
			require.GreaterOrEqual(t, len(last), 2, s.name)
			assert.Contains(t, last[len(last)-2], `"code":"key_revoked"`, s.name)
			assert.Equal(t, "data: [DONE]", last[len(last)-1], s.name)
		} else {
			assert.Contains(t, last[len(last)-1], `"error":"the API key was revoked`, s.name)
		}
	}
	// Their generations stopped; bob's runs on.
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, http.DefaultClient, c.URL)["active_streams"].(float64) == 1 })
	require.True(t, bobs.lines.Scan())
	assert.NotContains(t, bobs.lines.Text(), "error")
}
