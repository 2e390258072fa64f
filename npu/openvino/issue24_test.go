//go:build cgo

package openvino

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// writeVisionModel makes a vision-language model folder whose config.json
// names its model_type.
func writeVisionModel(t *testing.T, dir, name, modelType string) {
	t.Helper()
	vlm := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(vlm, 0o755))
	for file, content := range map[string]string{
		"openvino_language_model.xml":          "<net/>",
		"openvino_vision_embeddings_model.xml": "<net/>",
		"openvino_text_embeddings_model.xml":   "<net/>",
		"tokenizer_config.json":                testTokenizerConfig,
		"config.json":                          `{"model_type": "` + modelType + `"}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(vlm, file), []byte(content), 0o644))
	}
}

// Issue 24, defect 7: GenAI forces a STATIC prefill for Gemma3 vision
// models (NPUW cannot chunk their inputs); npud's --npu-prefill-hint
// DYNAMIC must not replace it, or the compile fails once MAX_PROMPT_LEN is
// above the chunk size. Other models get the hint.
func TestPrefillHintLeavesGemma3VisionModelsStatic(t *testing.T) {
	dir := modelsDir(t, "tiny")
	writeVisionModel(t, dir, "gemma", "gemma3")
	e, r := newTestEngine(t, "NPU", Config{Device: "NPU", ModelsDir: dir, MaxPromptLen: 4096, PrefillHint: "DYNAMIC", PrefixCaching: true})
	require.NoError(t, e.Load(context.Background(), "gemma"), "GenAI's STATIC stays: NPUW compiles")
	_, _, err := run(t, r, &npu.Request{Model: "gemma", Messages: []npu.Message{{Role: "user", Content: words("g", 2000)}}})
	require.NoError(t, err)
	assert.Equal(t, 1, testLastChunks(), "one static prefill")

	require.NoError(t, e.Load(context.Background(), "tiny"))
	_, _, err = run(t, r, &npu.Request{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: words("t", 2000)}}})
	require.NoError(t, err)
	assert.Equal(t, 2, testLastChunks(), "other models are chunked as asked")
}

// Issue 24, defect 3: GenAI turns MAX_PROMPT_LEN and MIN_RESPONSE_LEN into
// integers only for the device named exactly "NPU", and throws on the
// string for "NPU.0" (the test library does as GenAI does); npud compiles
// an indexed NPU as "NPU", and refuses an NPU GenAI would not use, saying
// why.
func TestIndexedNPUCompilesWithItsPromptLength(t *testing.T) {
	t.Setenv("OVTEST_DEVICES", "NPU.0,NPU.1")
	_, err := newPipeline(testLib.api, filepath.Join(modelsDir(t, "tiny"), "tiny"), "NPU.0", []property{{"MAX_PROMPT_LEN", "2048"}})
	require.Error(t, err, "GenAI refuses a string MAX_PROMPT_LEN for NPU.0")

	for _, device := range []string{"NPU.0", "NPU.1"} {
		t.Run(device, func(t *testing.T) {
			e, r := newTestEngine(t, "NPU.0,NPU.1", Config{Device: device, MaxPromptLen: 2048})
			err := e.Load(context.Background(), "tiny")
			if device == "NPU.1" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "default NPU (NPU.0)")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "NPU.0", e.DeviceOf("tiny"))
			_, res, err := run(t, r, &npu.Request{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: words("x", 1500)}}})
			require.NoError(t, err, "a prompt over GenAI's default 1024 fits the 2048 asked for")
			assert.Equal(t, 1500, res.PromptTokens)
		})
	}
}
