package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

const statusKey = "status-key-0123456789abcdef"

// Issue 17: the console's files are open (they hold no data) behind the
// same Host guard as everything else, with a policy that keeps the page to
// its own origin; the status it polls needs a key like the API.
func TestConsoleAndStatusRoutes(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{{Name: "alice", Key: statusKey}}
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	for _, tc := range []struct {
		name, method, path string
		header             []string
		status             int
		contains           string
	}{
		{"page without a key", http.MethodGet, "/ui/", nil, http.StatusOK, "<title>npud console</title>"},
		{"script without a key", http.MethodGet, "/ui/app.js", nil, http.StatusOK, "import { render }"},
		{"bare /ui redirects", http.MethodGet, "/ui", nil, http.StatusMovedPermanently, ""},
		{"missing file", http.MethodGet, "/ui/nothing.js", nil, http.StatusNotFound, ""},
		{"page on a rebinding host", http.MethodGet, "/ui/", []string{"Host", "evil.example:11434"}, http.StatusForbidden, "forbidden_host"},
		{"status without a key", http.MethodGet, daemon.StatusPath, nil, http.StatusUnauthorized, "missing_api_key"},
		{"status with a key", http.MethodGet, daemon.StatusPath, []string{"Authorization", "Bearer " + statusKey}, http.StatusOK, `"engine":"sim"`},
		{"root still answers Ollama's line", http.MethodGet, "/", nil, http.StatusOK, "Ollama is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.HTTP.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, body := c.Do(t, tc.method, tc.path, "", tc.header...)
			assert.Equal(t, tc.status, resp.StatusCode, string(body))
			assert.Contains(t, string(body), tc.contains)
			if tc.status == http.StatusOK && strings.HasPrefix(tc.path, "/ui/") {
				csp := resp.Header.Get("Content-Security-Policy")
				assert.Contains(t, csp, "script-src 'self'")
				assert.Contains(t, csp, "connect-src 'self'")
				assert.Contains(t, csp, "frame-ancestors 'none'")
				assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
		})
	}
}

// Issue 17: the status the console polls shows the loaded model, its
// device and keep-alive, and running totals that move with the work.
func TestStatusReportsLoadedModelsAndTotals(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	status := func() map[string]any {
		resp, body := c.Do(t, http.MethodGet, daemon.StatusPath, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var s map[string]any
		require.NoError(t, json.Unmarshal(body, &s))
		return s
	}
	before := status()
	assert.Equal(t, true, before["simulated"])
	assert.Empty(t, before["loaded"])
	assert.Equal(t, []any{"sim"}, before["models"])

	resp, body := c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"hello there","stream":false,"keep_alive":"10m"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	after := status()
	loaded := after["loaded"].([]any)
	require.Len(t, loaded, 1)
	m := loaded[0].(map[string]any)
	assert.Equal(t, "sim", m["id"])
	assert.Equal(t, "simulated", m["device"])
	assert.InDelta(t, 600, m["keep_alive_seconds"], 5)
	totals, was := after["totals"].(map[string]any), before["totals"].(map[string]any)
	assert.Greater(t, totals["completion_tokens"], was["completion_tokens"])
	assert.Greater(t, totals["ttft_count"], was["ttft_count"])
	assert.Greater(t, totals["generation_requests"], was["generation_requests"])
	assert.Equal(t, 0.0, after["active_streams"])
}

// Issue 27: the console's charts started empty unless the page was open
// (it computed them from its own polls). The status now carries the
// daemon's own record of the last generations: a page opened later draws
// what came before it, one point per request.
func TestStatusKeepsTheRecentGenerations(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	recent := func() []map[string]any {
		resp, body := c.Do(t, http.MethodGet, daemon.StatusPath, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var s struct {
			Recent []map[string]any `json:"recent"`
		}
		require.NoError(t, json.Unmarshal(body, &s))
		return s.Recent
	}
	assert.Empty(t, recent())
	for i := range 6 {
		resp, body := c.Do(t, http.MethodPost, "/v1/chat/completions",
			fmt.Sprintf(`{"model":"sim","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"hi %d"}]}`, 4+i, i))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	}
	got := recent()
	require.Len(t, got, 6, "one point per request")
	for i, r := range got {
		assert.Equal(t, "sim", r["model"])
		assert.Greater(t, r["ttft_ms"], 0.0)
		assert.EqualValues(t, 4+i, r["tokens"], "oldest first")
		assert.Greater(t, r["itl_ms"], 0.0)
		assert.Greater(t, r["tokens_per_second"], 0.0)
	}

	// Bounded: the newest 60.
	for i := range 60 {
		resp, body := c.Do(t, http.MethodPost, "/api/generate",
			fmt.Sprintf(`{"model":"sim","prompt":"p %d","stream":false,"options":{"num_predict":2}}`, i))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	}
	got = recent()
	require.Len(t, got, 60)
	assert.EqualValues(t, 2, got[0]["tokens"], "the six first ones are gone")
	assert.EqualValues(t, 2, got[59]["tokens"])
	for i := 1; i < len(got); i++ {
		assert.LessOrEqual(t, got[i-1]["at"], got[i]["at"], "oldest first")
	}
}
