package daemon_test

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// Issue 38.8: under the default --engine auto, with no OpenVINO GenAI (the
// simulated engine serves while the models folder takes pulls), `ollama
// pull sim` was a 400 ("repository \"sim\": want OWNER/NAME"): the name
// went to the models folder before the served models were asked. A model
// npud already serves is pulled at once, as with --engine sim; a name it
// does not serve still goes to the folder, and its errors stay.
func TestPullOfAServedModelUnderEngineAuto(t *testing.T) {
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0",
		"--openvino-lib", filepath.Join(t.TempDir(), "no-genai-here"),
		"--models-dir", filepath.Join(t.TempDir(), "models"), "--cache-dir", "",
		"--sim-ttft", "1ms", "--sim-itl", "1ms"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "auto", cfg.Engine, "the default engine selection")
	srv := daemontest.Start(t, cfg, nil)
	require.Equal(t, true, daemontest.Health(t, &http.Client{}, srv.URL)["simulated"])

	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	client := api.NewClient(base, http.DefaultClient)

	var statuses []string
	require.NoError(t, client.Pull(t.Context(), &api.PullRequest{Model: "sim"}, func(p api.ProgressResponse) error {
		statuses = append(statuses, p.Status)
		return nil
	}))
	require.NotEmpty(t, statuses)
	assert.Equal(t, "success", statuses[len(statuses)-1])

	// A name nobody serves still reaches the folder, which names what it wants.
	err = client.Pull(t.Context(), &api.PullRequest{Model: "llama3"}, func(api.ProgressResponse) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OWNER/NAME")
}
