//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/modelstore"
)

// Issue 24, defect 9 and build 2: on the NPU a model reports its prompt
// limit (MAX_PROMPT_LEN, here from the model folder's properties file) and
// its context (MAX_PROMPT_LEN + MIN_RESPONSE_LEN - 1) in /v1/models,
// /api/show and /api/ps, and Ollama's turn dropping is sized by that
// model's prompt limit, not the engine's.
func TestOpenVINONPUReportsItsPromptLimit(t *testing.T) {
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(models, "tiny", modelstore.PropertiesFile),
		[]byte(`{"MAX_PROMPT_LEN": 40, "MIN_RESPONSE_LEN": 64}`), 0o644))
	t.Setenv("OVTEST_DEVICES", "NPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "NPU", ""
	cfg.NPUMaxPromptLen, cfg.NPUMinResponseLen = 16384, 1024
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)

	_, raw := c.Do(t, http.MethodGet, "/v1/models", "")
	assert.Contains(t, string(raw), `"context_length":103,"prompt_limit":40`)
	_, raw = c.Do(t, http.MethodPost, "/api/show", `{"model":"tiny"}`)
	assert.Contains(t, string(raw), `"npud.prompt_limit":40`)
	assert.Contains(t, string(raw), `"npud.context_length":103`)

	// 60 words of history: over this model's 40, far under the engine's
	// 16384. Ollama drops the oldest turns until it fits.
	history := `[{"role":"system","content":"sys"},{"role":"user","content":"` + wordsOf(25) + `"},` +
		`{"role":"assistant","content":"` + wordsOf(25) + `"},{"role":"user","content":"` + wordsOf(10) + `"}]`
	resp, raw := c.Do(t, http.MethodPost, "/api/chat", `{"model":"tiny","stream":false,"options":{"num_predict":3},"messages":`+history+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "Ollama drops the oldest turns: %s", raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.LessOrEqual(t, out["prompt_eval_count"], float64(40))

	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"context_length":103,"prompt_limit":40`)
}

func wordsOf(n int) string {
	b := make([]byte, 0, 2*n)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, 'w')
	}
	return string(b)
}
