//go:build cgo

package daemon

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/openvino"
	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// Issue 38.9: with GenAI's C library in a folder of its own (--openvino-lib
// DIR) and openvino-tokenizers elsewhere (here on the loader's path), the
// workers' GenAI failed every pipeline. The daemon finds the tokenizers
// as discovery finds the core and points the workers' GenAI at them
// through OPENVINO_TOKENIZERS_PATH_GENAI, the one variable it adds to a
// worker's environment; a model then loads and answers.
func TestWorkersFindTheTokenizers(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.Current)
	t.Setenv(openvino.EnvTokenizersPath, "")
	alone, tokDir := ovtestlib.SplitTokenizers(t, lib)
	t.Setenv("LD_LIBRARY_PATH", tokDir)
	genai := filepath.Join(alone, "libopenvino_genai_c.so")

	assert.Equal(t, []string{openvino.EnvTokenizersPath + "=" + filepath.Join(tokDir, "libopenvino_tokenizers.so")}, tokenizersEnv(genai))
	assert.Nil(t, tokenizersEnv(filepath.Join(lib, "libopenvino_genai_c.so")), "GenAI finds the ones beside it itself")

	models := t.TempDir()
	ovtestlib.WriteModel(t, models, "tiny")
	t.Setenv("OVTEST_DEVICES", "CPU")
	base := serveOpenVINO(t, "--isolation", "process", "--openvino-lib", alone, "--models-dir", models, "--cache-dir", "", "--device", "CPU")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/generate",
		strings.NewReader(`{"model":"tiny","prompt":"hello","stream":false,"options":{"num_predict":4}}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"done":true`)
}
