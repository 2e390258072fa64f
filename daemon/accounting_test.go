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

// holdStream starts a long streaming chat for model as key and returns
// once its first event arrived; cancel ends it.
func holdStream(t *testing.T, url, key, model string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"max_tokens":2000,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = resp.Body.Read(make([]byte, 1))
	require.NoError(t, err)
	return func() { cancel(); _ = resp.Body.Close() }
}

// Issue 28 defects 1 and 4: a tenant's stream cap is one, whichever engine
// runs its generations (local or an upstream) and for embeddings too; each
// refusal counts in npud_rate_limited_total{reason="streams"}.
func TestStreamCapHoldsAcrossUpstreamsAndEmbeddings(t *testing.T) {
	backCfg := daemontest.Defaults(t)
	backCfg.Aliases = map[string]string{"big": "sim"}
	backCfg.SimITL = 20 * time.Millisecond
	back := daemontest.Start(t, backCfg, nil)
	front := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice, ops}
		c.MaxStreams = 1
		c.SimITL = 20 * time.Millisecond
		c.Upstreams = []string{"back=" + back.URL + ";models=big"}
	}, nil)
	c := daemontest.NewClient(t, front.URL)
	as := []string{"Authorization", "Bearer " + alice.Key}
	refused := func(path, body string) {
		t.Helper()
		resp, raw := c.Do(t, http.MethodPost, path, body, as...)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s %s", path, raw)
		assert.Contains(t, string(raw), `tenant \"alice\" already runs`)
	}

	stop := holdStream(t, front.URL, alice.Key, "sim") // local
	refused("/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"x"}]}`)
	refused("/api/embed", `{"model":"sim","input":"x"}`)
	stop()
	daemontest.Eventually(t, func() bool { return daemontest.Health(t, c.HTTP, front.URL)["active_streams"] == 0.0 })

	stop = holdStream(t, front.URL, alice.Key, "big") // upstream
	refused("/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"x"}]}`)
	refused("/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"x"}]}`)
	stop()

	assert.EqualValues(t, 4, scrapeMetrics(t, front.URL, "Authorization", "Bearer "+ops.Key)[`npud_rate_limited_total{reason="streams",tenant="alice"}`])
}

// Issue 28 defect 4: a WebSocket generation is an active stream while it
// runs, as an HTTP one is.
func TestWebSocketGenerationsAreActiveStreams(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = 20 * time.Millisecond }, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http://", "ws://", 1)+"/npud/v1/streams", nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	b, _ := json.Marshal(map[string]any{"type": "start", "request_id": "long", "model": "sim", "max_tokens": 2000,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	require.NoError(t, conn.Write(ctx, websocket.MessageText, b))
	for {
		_, data, err := conn.Read(ctx)
		require.NoError(t, err)
		if strings.Contains(string(data), `"started"`) {
			break
		}
	}
	active := func() float64 { return scrapeMetrics(t, srv.URL)[`npud_active_streams{route="/npud/v1/streams"}`] }
	assert.EqualValues(t, 1, active())
	b, _ = json.Marshal(map[string]any{"type": "cancel", "request_id": "long"})
	require.NoError(t, conn.Write(ctx, websocket.MessageText, b))
	daemontest.Eventually(t, func() bool { return active() == 0 })
}
