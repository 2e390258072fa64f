package daemon_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

func TestPreloadedModelsAreLoadedBeforeServing(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.Preload = []string{"sim"} }, nil)
	c := daemontest.NewClient(t, srv.URL)
	_, raw := c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"name":"sim"`)
	assert.Contains(t, string(raw), `"expires_at":"9999-`, "kept loaded")
}

// Issue 12, item 11: a preload that fails stops the start before npud
// says it listens (and before READY, which comes later still).
func TestPreloadingAnUnknownModelFailsTheStart(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Preload = []string{"nope"}
	var logs strings.Builder
	srv, err := daemon.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	err = srv.Serve(context.Background())
	require.ErrorContains(t, err, `preloading model "nope"`)
	assert.NotContains(t, logs.String(), "npud listening", "a start that fails never said it was serving")
}

// Issue 12, item 11: a preloaded model stayed pinned only until its first
// request, whose (default) keep-alive then unloaded it.
func TestPreloadedModelsStayLoadedAfterRequests(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Preload = []string{"sim"}
		c.KeepAlive = 20 * time.Millisecond
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	for _, body := range []string{
		`{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":2}}`,
		`{"model":"sim","prompt":"hi","stream":false,"keep_alive":"10ms","options":{"num_predict":2}}`,
	} {
		resp, raw := c.Do(t, http.MethodPost, "/api/generate", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	}
	time.Sleep(100 * time.Millisecond) // both keep-alives have passed
	_, raw := c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"name":"sim"`, "still loaded")
	assert.Contains(t, string(raw), `"expires_at":"9999-`, "still pinned")
}

// Issue 12, item 2: any key could unload a preloaded model with
// keep_alive 0; that acts for every tenant, so it needs an admin key.
func TestOnlyAnAdminUnloadsAPreloadedModel(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.Preload = []string{"sim"}
		c.APIKeys = []daemon.APIKey{{Name: "alice", Key: "alice-0123456789abcdef"}, {Name: "ops", Key: "ops-0123456789abcdef", Admin: true}}
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	alice := []string{"Authorization", "Bearer alice-0123456789abcdef"}
	ops := []string{"Authorization", "Bearer ops-0123456789abcdef"}
	loaded := func() bool {
		_, raw := c.Do(t, http.MethodGet, "/api/ps", "", ops...)
		return strings.Contains(string(raw), `"name":"sim"`)
	}

	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","keep_alive":0}`, alice...)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"error":"model \"sim\" is preloaded`)
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","prompt":"hi","stream":false,"keep_alive":0,"options":{"num_predict":2}}`, alice...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.True(t, loaded(), "a tenant's keep_alive 0 leaves the pinned model loaded")

	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"sim","keep_alive":0}`, ops...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.False(t, loaded(), "the admin unloaded it")
}

func TestAliasesAreServed(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.Aliases = map[string]string{"fast": "sim"} }, nil)
	c := daemontest.NewClient(t, srv.URL)
	_, raw := c.Do(t, http.MethodGet, "/v1/models", "")
	assert.Contains(t, string(raw), `"id":"fast"`)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"fast","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"model":"fast"`, "the answer names the model as asked")
}
