//go:build cgo

package daemon_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/cli"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/modelstore"
)

// Issue 38.3: /api/show (and npud show, which reads it) lists the engine
// properties a model's folder sets, in Ollama's "parameters", and says why
// a folder's file is refused; the model with the refused file does not
// load, and the error names the property.
func TestShowListsWhatTheModelFolderSets(t *testing.T) {
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	daemontest.WriteOpenVINOModel(t, models, "hostile")
	require.NoError(t, os.WriteFile(filepath.Join(models, "tiny", modelstore.PropertiesFile),
		[]byte(`{"MAX_PROMPT_LEN": 40, "NPUW_LLM_ENABLE_PREFIX_CACHING": false}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(models, "hostile", modelstore.PropertiesFile),
		[]byte(`{"CACHE_DIR": "/var/tmp/elsewhere"}`), 0o644))
	t.Setenv("OVTEST_DEVICES", "NPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "NPU", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)

	_, raw := c.Do(t, http.MethodPost, "/api/show", `{"model":"tiny"}`)
	var show struct {
		Parameters string         `json:"parameters"`
		ModelInfo  map[string]any `json:"model_info"`
	}
	require.NoError(t, json.Unmarshal(raw, &show), "%s", raw)
	assert.Equal(t, "MAX_PROMPT_LEN 40\nNPUW_LLM_ENABLE_PREFIX_CACHING NO\n", show.Parameters)
	assert.EqualValues(t, 40, show.ModelInfo["npud.prompt_limit"])

	var stdout, stderr bytes.Buffer
	host := strings.TrimPrefix(srv.URL, "http://")
	require.Equal(t, 0, cli.Main(t.Context(), []string{"show", "--host", host, "tiny"}, func(string) string { return "" }, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "Parameters (npud-properties.json)\n    MAX_PROMPT_LEN 40\n    NPUW_LLM_ENABLE_PREFIX_CACHING NO\n")

	_, raw = c.Do(t, http.MethodPost, "/api/show", `{"model":"hostile"}`)
	require.NoError(t, json.Unmarshal(raw, &show), "%s", raw)
	assert.Empty(t, show.Parameters)
	assert.Contains(t, show.ModelInfo["npud.properties_refused"], "CACHE_DIR: a path")
	stdout.Reset()
	require.Equal(t, 0, cli.Main(t.Context(), []string{"show", "--host", host, "hostile"}, func(string) string { return "" }, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "refused: ")
	assert.Contains(t, stdout.String(), "CACHE_DIR: a path")

	resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"hostile","prompt":"hi","stream":false}`)
	assert.GreaterOrEqual(t, resp.StatusCode, 400, "%s", raw)
	assert.Contains(t, string(raw), "CACHE_DIR")
	_, err := os.Stat("/var/tmp/elsewhere")
	assert.True(t, os.IsNotExist(err))
}
