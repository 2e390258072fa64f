//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// TestOpenVINOEngineServesBothAPIs runs `--engine openvino` against npud's
// GenAI test library: the real cgo path, end to end.
func TestOpenVINOEngineServesBothAPIs(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(models, "tiny"), 0o755))
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	t.Setenv("OVTEST_DEVICES", "CPU,NPU")

	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "AUTO", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)

	_, raw := c.Do(t, http.MethodGet, "/v1/models", "")
	assert.Contains(t, string(raw), `"id":"tiny"`)

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"tiny","stream":true,"max_tokens":5,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	body := string(raw)
	assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"))
	assert.Contains(t, body, `"finish_reason":"length"`)
	assert.Contains(t, body, `"completion_tokens":5`)

	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"hello","stream":false,"options":{"num_predict":4}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.Equal(t, true, out["done"])
	assert.EqualValues(t, 4, out["eval_count"])
	assert.EqualValues(t, 1, out["prompt_eval_count"])
	assert.NotEmpty(t, out["response"])

	resp, _ = c.Do(t, http.MethodPost, "/api/generate", `{"model":"nope","prompt":"x"}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// On the NPU a prompt over MAX_PROMPT_LEN (npud's default 16384) is a
	// 400 that names the limit.
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"tiny","messages":[{"role":"user","content":"`+strings.Repeat("word ", 17000)+`"}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "MAX_PROMPT_LEN")
	assert.Contains(t, string(raw), "context_length_exceeded")

	// AUTO placed the model on the NPU; health and ps say so.
	_, raw = c.Do(t, http.MethodGet, "/health", "")
	assert.Contains(t, string(raw), `"device":"NPU"`)
	_, raw = c.Do(t, http.MethodGet, "/api/ps", "")
	assert.Contains(t, string(raw), `"device":"NPU"`)

	// Admin reload through the real binding: a fresh pipeline is swapped in;
	// with the model's files broken, the reload fails and the loaded
	// pipeline keeps serving.
	resp, raw = c.Do(t, http.MethodPost, "/admin/reload", `{"model":"tiny"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"device":"NPU"`)
	require.NoError(t, os.Remove(filepath.Join(models, "tiny", "openvino_model.xml")))
	resp, raw = c.Do(t, http.MethodPost, "/admin/reload", `{"model":"tiny"}`)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "reload_failed")
	assert.Contains(t, string(raw), "keeps serving")
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"still here","stream":false,"options":{"num_predict":3}}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the old pipeline serves: %s", raw)
}

// A model that compiles slowly (an NPU compile takes minutes) holds no
// engine slot: another model's requests are answered while it compiles,
// through the real binding.
func TestOpenVINOSlowCompileDoesNotStallOtherModels(t *testing.T) {
	models := t.TempDir()
	for _, m := range []string{"tiny", "huge"} {
		require.NoError(t, os.MkdirAll(filepath.Join(models, m), 0o755))
		daemontest.WriteOpenVINOModel(t, models, m)
	}
	require.NoError(t, os.WriteFile(filepath.Join(models, "huge", "slow_compile"), nil, 0o644))
	t.Setenv("OVTEST_DEVICES", "CPU")
	t.Setenv("OVTEST_COMPILE_DELAY_US", "2000000")

	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "CPU", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	cfg.Preload = []string{"tiny"}
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)

	hugeDone := make(chan string, 1)
	go func() {
		_, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"huge","prompt":"x","stream":false,"options":{"num_predict":3}}`)
		hugeDone <- string(raw)
	}()
	time.Sleep(300 * time.Millisecond) // huge is compiling now (for 2 s)
	for i := range 3 {
		resp, raw := c.Do(t, http.MethodPost, "/api/generate", `{"model":"tiny","prompt":"quick","stream":false,"options":{"num_predict":3}}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		select {
		case <-hugeDone:
			t.Fatalf("request %d on tiny waited for huge's compile", i)
		default:
		}
	}
	raw := <-hugeDone
	assert.Contains(t, raw, `"done":true`)
	var out struct {
		LoadDuration int64 `json:"load_duration"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &out))
	assert.GreaterOrEqual(t, out.LoadDuration, int64(2e9), "huge's answer counts its compile")
}
