package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
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
	conn, _, err := websocket.Dial(ctx, strings.Replace(c.URL, "http://", "ws://", 1)+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + alice.Key}}})
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText,
		[]byte(`{"type":"response.create","model":"sim","input":"a long one","max_output_tokens":5000}`)))
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
