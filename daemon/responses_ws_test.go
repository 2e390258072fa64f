package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// A reload that revokes a key ends its Responses WebSockets as it ends
// /npud/v1/streams: the running response gets an error event (key_revoked)
// and response.failed, then the close handshake says why (1008).
func TestRevokedKeyEndsItsResponsesWebSocket(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, {Name: "bob", Key: "sk-bob-0123456789ab"}}
	cfg.SimITL = 10 * time.Millisecond
	srv, err := daemon.New(cfg, discardLogger())
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	conn := startResponse(ctx, t, c.URL, alice.Key, `{"type":"response.create","model":"sim","input":"a long one","max_output_tokens":5000}`)
	type event struct {
		Type  string `json:"type"`
		Code  string `json:"code"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	read := func() event {
		_, data, err := conn.Read(ctx)
		require.NoError(t, err)
		var ev event
		require.NoError(t, json.Unmarshal(data, &ev), "%s", data)
		return ev
	}
	for read().Type != "response.output_text.delta" {
	}

	next := cfg
	next.APIKeys = cfg.APIKeys[1:]
	require.NoError(t, srv.Reload(next))
	var types []string
	var code string
	for {
		ev := read()
		types = append(types, ev.Type)
		if ev.Type == "error" {
			code = ev.Code
		}
		if ev.Type == "response.failed" {
			break
		}
		require.NotContains(t, []string{"response.completed", "response.incomplete"}, ev.Type)
	}
	assert.Equal(t, "key_revoked", code, "%v", types)
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "%v", err)
}

// bigAnswer is an engine that answers one token of n pseudo-random
// letters (no compression shrinks it) and returns: a client that does not
// read keeps the relay writing it after the engine has finished.
type bigAnswer struct {
	*sim.Engine
	n int
}

func (e bigAnswer) Generate(_ context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	b := make([]byte, e.n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	sink(string(b))
	return npu.Result{FinishReason: npu.FinishStop, PromptTokens: 1, CompletionTokens: 1}, nil
}

// Issue 38 item 4: a response the engine had finished but the connection
// had not yet delivered when the key was revoked reported
// response.completed (and became the connection's latest, and was
// stored); it ends with key_revoked and response.failed as over SSE, and
// is not stored.
func TestRevokedKeyFailsAResponseFinishedButNotDelivered(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	admin := daemon.APIKey{Name: "ops", Key: "sk-ops-0123456789abc", Admin: true}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, admin}
	cfg.MaxPendingBytes = 64 << 20
	const answer = 12 << 20 // more than loopback's socket buffers hold for a reader that reads nothing
	srv, err := daemon.New(cfg, discardLogger(), daemon.WithEngine(bigAnswer{Engine: sim.New(sim.Config{}), n: answer}))
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	conn := startResponse(ctx, t, c.URL, alice.Key, `{"type":"response.create","model":"sim","input":"hello"}`)
	conn.SetReadLimit(2 * answer)

	type event struct {
		Type     string `json:"type"`
		Code     string `json:"code"`
		Response struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"response"`
	}
	var types []string
	var code, id string
	read := func() event {
		_, data, err := conn.Read(ctx)
		require.NoError(t, err, "%v", types)
		var ev event
		require.NoError(t, json.Unmarshal(data, &ev))
		types = append(types, ev.Type)
		if ev.Response.ID != "" {
			id = ev.Response.ID
		}
		if ev.Type == "error" {
			code = ev.Code
		}
		return ev
	}
	// The response has begun on the wire: a revocation before its first
	// event is answered as a refusal is, with an error message alone
	// (status 401, as HTTP's 401 before the first byte), and that is not
	// the case this test is about.
	require.Equal(t, "response.created", read().Type)

	// The engine has finished (its tokens are counted only then) while the
	// connection still writes the answer to a client that reads nothing
	// more.
	daemontest.Eventually(t, func() bool {
		return scrapeMetrics(t, c.URL, "Authorization", "Bearer "+admin.Key).sum("npud_completion_tokens_total", "tenant", "alice") > 0
	})
	next := cfg
	next.APIKeys = []daemon.APIKey{admin}
	require.NoError(t, srv.Reload(next))

	for {
		ev := read()
		require.NotContains(t, []string{"response.completed", "response.incomplete"}, ev.Type, "%v", types)
		if ev.Type == "response.failed" {
			assert.Equal(t, "failed", ev.Response.Status)
			break
		}
	}
	assert.Contains(t, types, "response.output_text.delta", "the answer was being delivered")
	assert.Equal(t, "key_revoked", code, "%v", types)
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "%v", err)

	// Given back, the key finds no stored response of that turn.
	require.NoError(t, srv.Reload(cfg))
	resp, body := c.Do(t, "GET", "/v1/responses/"+id, "", "Authorization", "Bearer "+alice.Key)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
}

// silentEngine starts its one generation and says nothing until it is
// stopped.
type silentEngine struct {
	*sim.Engine
	once    *sync.Once
	started chan struct{}
}

func (e silentEngine) Generate(ctx context.Context, _ *npu.Request, _ npu.Sink) (npu.Result, error) {
	e.once.Do(func() { close(e.started) })
	<-ctx.Done()
	return npu.Result{}, context.Cause(ctx)
}

// A response the key lost before its first event had begun nothing on the
// wire: it is answered as a refusal is, with one error message (the 401 an
// HTTP request gets before its first byte), written before the close says
// 1008; no response.created, so no response.failed is owed.
func TestRevokedKeyRefusesAResponseNotYetBegun(t *testing.T) {
	alice := daemon.APIKey{Name: "alice", Key: "sk-alice-0123456789"}
	admin := daemon.APIKey{Name: "ops", Key: "sk-ops-0123456789abc", Admin: true}
	cfg := daemontest.Defaults(t)
	cfg.APIKeys = []daemon.APIKey{alice, admin}
	cfg.Heartbeat = 0 // a heartbeat would begin the response
	engine := silentEngine{Engine: sim.New(sim.Config{}), once: &sync.Once{}, started: make(chan struct{})}
	srv, err := daemon.New(cfg, discardLogger(), daemon.WithEngine(engine))
	require.NoError(t, err)
	c := serveInBackground(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	conn := startResponse(ctx, t, c.URL, alice.Key, `{"type":"response.create","model":"sim","input":"hello"}`)
	select {
	case <-engine.started:
	case <-ctx.Done():
		t.Fatal("the engine never started")
	}
	// The connection's writer has the response (the route's stream is open).
	daemontest.Eventually(t, func() bool {
		return scrapeMetrics(t, c.URL, "Authorization", "Bearer "+admin.Key)[`npud_active_streams{route="/v1/responses"}`] == 1
	})
	next := cfg
	next.APIKeys = []daemon.APIKey{admin}
	require.NoError(t, srv.Reload(next))

	_, data, err := conn.Read(ctx)
	require.NoError(t, err)
	var msg struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &msg), "%s", data)
	assert.Equal(t, "error", msg.Type, "%s", data)
	assert.Equal(t, http.StatusUnauthorized, msg.Status, "%s", data)
	assert.Equal(t, "key_revoked", msg.Error.Code, "%s", data)
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "%v", err)
}

// startResponse opens a Responses WebSocket on baseURL with key and sends
// create; the connection is closed when the test ends.
func startResponse(ctx context.Context, t *testing.T, baseURL, key, create string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, strings.Replace(baseURL, "http://", "ws://", 1)+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	require.NoError(t, err)
	t.Cleanup(func() { conn.CloseNow() })
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(create)))
	return conn
}
