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
	"github.com/npud/npud/npu/hub/hubtest"
)

// TestOpenVINORequestErrorsInEachProtocol (issue 11, defects 4 and 6): what
// the engine refuses comes out as each protocol's 400, and an Ollama chat
// over the NPU's prompt limit drops its oldest turns where OpenAI refuses.
func TestOpenVINORequestErrorsInEachProtocol(t *testing.T) {
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	require.NoError(t, os.MkdirAll(filepath.Join(models, "plain"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(models, "plain", "openvino_model.xml"), []byte("<net/>"), 0o644))
	t.Setenv("OVTEST_DEVICES", "NPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir, cfg.NPUMaxPromptLen = "openvino", models, "NPU", "", 8
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)

	type openAIError struct {
		Error struct{ Message, Type, Param, Code string }
	}
	// A model without a chat template, asked for chat.
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"plain","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	var oe openAIError
	require.NoError(t, json.Unmarshal(raw, &oe))
	assert.Equal(t, "invalid_request_error", oe.Error.Type)
	assert.Equal(t, "messages", oe.Error.Param)
	assert.Contains(t, oe.Error.Message, "chat template")
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"plain","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `{"error":"model \"plain\" has no chat template`)
	resp, raw = c.Do(t, http.MethodPost, "/v1/completions", `{"model":"plain","prompt":"still served","max_tokens":3}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)

	// A history over MAX_PROMPT_LEN (8 test tokens).
	history := `[{"role":"system","content":"sys"},{"role":"user","content":"a b c d"},{"role":"assistant","content":"e f g h"},{"role":"user","content":"i j"}]`
	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"tiny","max_tokens":3,"messages":`+history+`}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &oe))
	assert.Equal(t, "context_length_exceeded", oe.Error.Code)
	resp, raw = c.Do(t, http.MethodPost, "/api/chat", `{"model":"tiny","stream":false,"options":{"num_predict":3},"messages":`+history+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "Ollama drops the oldest turn: %s", raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	assert.LessOrEqual(t, out["prompt_eval_count"], float64(8))
}

// Issue 11 (model store): bad model names were 500s; they are 400s, and
// nothing of a refused copy or pull reaches the disk.
func TestOpenVINOModelNamesAreRequestErrors(t *testing.T) {
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", models, "CPU", ""
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	cfg.HubEndpoint = "http://127.0.0.1:9" // never reached: the names are refused first
	srv := daemontest.Start(t, cfg, nil)
	c := daemontest.NewClient(t, srv.URL)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/copy", `{"source":"tiny","destination":"../escape"}`},
		{http.MethodPost, "/api/copy", `{"source":"tiny","destination":"a/b"}`},
		{http.MethodPost, "/api/copy", `{"source":"tiny","destination":"half.partial"}`},
		{http.MethodPost, "/api/pull", `{"model":"not a repo","stream":false}`},
		{http.MethodPost, "/api/pull", `{"model":"a/../b","stream":false}`},
	} {
		resp, raw := c.Do(t, tc.method, tc.path, tc.body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", tc.path, tc.body, raw)
		assert.Contains(t, string(raw), `"error"`)
	}
	entries, err := os.ReadDir(models)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the model that was there")
	_, err = os.Stat(filepath.Join(filepath.Dir(models), "escape"))
	assert.True(t, os.IsNotExist(err))
}

// Issue 17: `npud pull` has the running daemon pull, and shows its
// progress; the model is then listed.
func TestOpenVINOPullThroughTheDaemon(t *testing.T) {
	models := t.TempDir()
	daemontest.WriteOpenVINOModel(t, models, "tiny")
	hub := hubtest.Serve(t, "OpenVINO/other-ov", map[string]string{"openvino_model.xml": "<net/>", "openvino_model.bin": "weights"})
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir, cfg.HubEndpoint = "openvino", models, "CPU", "", hub.URL
	cfg.OpenVINOLib = daemontest.TestLibrary(t)
	srv := daemontest.Start(t, cfg, nil)

	var out, errOut bytes.Buffer
	code := cli.MainIO(t.Context(), []string{"pull", "--host", srv.URL, "OpenVINO/other-ov"}, func(string) string { return "" },
		strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "%s", errOut.String())
	assert.Contains(t, out.String(), "pulling manifest")
	assert.Contains(t, out.String(), "success: OpenVINO/other-ov")

	out.Reset()
	code = cli.MainIO(t.Context(), []string{"list", "--host", srv.URL}, func(string) string { return "" }, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "%s", errOut.String())
	assert.Contains(t, out.String(), "other-ov")

	code = cli.MainIO(t.Context(), []string{"pull", "--host", srv.URL, "not a repo"}, func(string) string { return "" },
		strings.NewReader(""), &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "OWNER/NAME")
}
