package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

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

func TestPreloadingAnUnknownModelFailsTheStart(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Preload = []string{"nope"}
	srv, err := daemon.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	err = srv.Serve(context.Background())
	require.ErrorContains(t, err, `preloading model "nope"`)
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
