package daemon_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// Issue 25 item 7: a worker process's environment holds none of the
// daemon's secrets (API keys, the hub token, upstream keys and URL
// passwords, from the configuration or the environment): read from the
// running worker's /proc/PID/environ.
func TestWorkerEnvironmentHoldsNoSecrets(t *testing.T) {
	secrets := []string{"sk-env-key-0123456789", "hf-env-token-secret", "sk-env-upstream-secret",
		"sk-alice-0123456789", "hf-flag-token-secret", "sk-spec-upstream-secret", "url-password-secret"}
	t.Setenv("NPUD_API_KEYS", "envy:"+secrets[0])
	t.Setenv("NPUD_HUB_TOKEN", secrets[1])
	t.Setenv("NPUD_UPSTREAM_REMOTE_KEY", secrets[2])
	t.Setenv("HF_TOKEN", secrets[1])
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.Isolation = "sim", "process"
	cfg.APIKeys = []daemon.APIKey{alice}
	cfg.HubToken = secrets[4]
	cfg.Upstreams = []string{"remote=http://user:" + secrets[6] + "@127.0.0.1:9/v1;models=far;key=" + secrets[5]}
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)

	workers := daemontest.ChildProcesses(t, os.Getpid())
	require.NotEmpty(t, workers, "the model runs in a worker")
	for _, pid := range workers {
		environ, err := os.ReadFile("/proc/" + pid + "/environ")
		require.NoError(t, err)
		require.True(t, bytes.Contains(environ, []byte("NPUD_WORKER_CONFIG=")), "a worker of this daemon")
		for _, secret := range secrets {
			assert.Falsef(t, strings.Contains(string(environ), secret), "the worker's environment holds %q", secret)
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			if strings.HasPrefix(kv, "NPUD_") {
				assert.True(t, strings.HasPrefix(kv, "NPUD_WORKER_CONFIG="), "only its configuration: %.40s", kv)
			}
		}
	}
}

// Issue 25 item 7: an upstream URL's password and key are masked in
// `npud config check`, in configuration errors (flags, environment) and
// in the log at start.
func TestUpstreamSecretsAreMasked(t *testing.T) {
	const spec = "far=http://bob:pw-url-secret@127.0.0.1:9/v1;models=m;key=sk-up-secret-0123"
	noEnv := func(string) string { return "" }
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Main(t.Context(), []string{"config", "check", "--upstream", spec}, noEnv, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), `upstream = ["far=http://bob:xxxxx@127.0.0.1:9/v1;models=m;key=****"]`)

	bad := spec + ";colour=blue"
	out.Reset()
	assert.Equal(t, 1, cli.Main(t.Context(), []string{"config", "check", "--upstream", bad}, noEnv, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown option "colour"`)
	_, err := daemon.ParseServe(nil, func(k string) string {
		if k == "NPUD_UPSTREAM" {
			return bad
		}
		return ""
	}, io.Discard)
	require.Error(t, err)
	unparsable := "far=http://bob:pw-url-secret@[::1;key=sk-up-secret-0123"
	_, err2 := daemon.ParseServe([]string{"--upstream", unparsable}, noEnv, io.Discard)
	require.Error(t, err2)

	var logs syncBuffer
	cfg := daemontest.Defaults(t)
	cfg.Upstreams = []string{spec}
	srv, err3 := daemon.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err3)
	serveInBackground(t, srv)
	assert.Contains(t, logs.String(), "bob:xxxxx@127.0.0.1:9")

	for _, text := range []string{out.String(), errOut.String(), err.Error(), err2.Error(), logs.String()} {
		assert.NotContains(t, text, "pw-url-secret")
		assert.NotContains(t, text, "sk-up-secret")
	}
}
