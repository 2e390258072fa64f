//go:build cgo

package openvino

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// Issue 24, defect 10: the test library's ov_get_error_info answers
// OpenVINO's texts (src/bindings/c/src/ov_common.cpp), indexed by -status,
// the last one for anything beyond; npud's errors carry them.
func TestErrorTextsAreOpenVINOs(t *testing.T) {
	want := []string{"general error", "it's not implement", "failed to network", "input parameter mismatch",
		"cannot find the value", "out of bounds", "run with unexpected error", "request is busy", "result is not ready",
		"it is not allocated", "inference start with error", "network is not ready", "inference is canceled",
		"invalid c input parameters", "unknown c error", "not implement in c method", "unknown exception"}
	for i, text := range want {
		status := -(i + 1)
		assert.Equal(t, text, testLib.errorText(status), "status %d", status)
	}
	assert.Equal(t, "unknown exception", testLib.errorText(-18), "past the last")
	assert.Equal(t, "unknown exception", testLib.errorText(3), "a positive status")
}

// Issue 24, defect 5: a failure before output on a long prompt was always
// called MAX_PROMPT_LEN, and Ollama routes retried up to 32 times. What
// GenAI counted of the history a request continues bounds its count: a
// failure on a prompt that cannot be over the limit is an engine error,
// however many bytes its text has; and the retries that drop turns are
// bounded (1, 2, 4, 8 turns, then what surely fits).
func TestNPUFailureClassifiedFromTheCountedHistory(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU", MaxPromptLen: 250})
	long := words("abcdefghij", 150) // 1650 bytes, 150 tokens
	first := []npu.Message{{Role: "user", Content: long}}
	answer, res, err := run(t, r, &npu.Request{Model: "tiny", Messages: first, Sampling: npu.Sampling{Seed: seed(5)}})
	require.NoError(t, err)
	require.Equal(t, 150, res.PromptTokens)
	next := append(first, npu.Message{Role: "assistant", Content: answer}, npu.Message{Role: "user", Content: "OVTEST_FAIL"})
	for _, drop := range []bool{false, true} {
		_, _, err = run(t, r, &npu.Request{Model: "tiny", Messages: next, DropOldestTurns: drop})
		var ee *npu.EngineError
		require.ErrorAs(t, err, &ee, "at most about 220 tokens, under the 250 limit: not the prompt's fault")
		assert.NotErrorIs(t, err, npu.ErrContextLength)
	}

	// A long history that fails whatever is dropped: a bounded number of tries.
	var history []npu.Message
	for i := range 64 {
		history = append(history, npu.Message{Role: "user", Content: words("OVTEST_FAIL", 10)}, npu.Message{Role: "assistant", Content: fmt.Sprint(i)})
	}
	history = append(history, npu.Message{Role: "user", Content: "OVTEST_FAIL"})
	before := testGenerateCalls()
	_, _, err = run(t, r, &npu.Request{Model: "tiny", Messages: history, DropOldestTurns: true})
	require.Error(t, err)
	assert.LessOrEqual(t, testGenerateCalls()-before, 1+maxDropRetries, "the retries are bounded")
}

// Issue 24, defect 2: Phi-4-mini's template reads its tools from the
// system message's "tools", never from the tools variable. GenAI renders
// with minja, which, given tools (set_tools) for such a template, polyfills
// them into the system message's text and rebuilds that message as role
// and content only: the "tools" npud put there would be gone, and the
// model would never see its tools in its own format. npud gives
// Phi-4-mini its tools on the system message only.
func TestPhi4MiniGetsItsToolsOnTheSystemMessage(t *testing.T) {
	dir := modelsDir(t, "phi")
	template := `{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}` +
		`{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}` +
		`{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}<|tool_call|>`
	var b bytes.Buffer // as Python's json writes it: < and > as they are
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(map[string]string{"chat_template": template}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "phi", "tokenizer_config.json"), b.Bytes(), 0o644))
	_, r := newTestEngine(t, "CPU", Config{Device: "CPU", ModelsDir: dir})
	tool := npu.Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	s, err := r.Start(&npu.Request{Model: "phi", Messages: []npu.Message{{Role: "user", Content: "weather in Oslo?"}}, Tools: []npu.Tool{tool}})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := npu.CollectAnswer(ctx, s.Next)
	require.NoError(t, err)
	var calls []string
	for _, c := range a.ToolCalls {
		calls = append(calls, c.Name)
	}
	assert.Equal(t, []string{"get_weather"}, calls, "the model saw its tools in its own format: %q %+v", a.Text, a.ToolCalls)
}

// Issue 24, defect 6: GenAI keeps what it encoded of a conversation's
// images in state attached to the ChatHistory object; npud built a new one
// every turn, so every image was encoded again. A conversation that
// continues keeps its history, and only new messages' images are passed:
// the model still sees the first turn's picture.
func TestVisionConversationEncodesEachImageOnce(t *testing.T) {
	dir := modelsDir(t, "tiny")
	writeVisionModel(t, dir, "vlm", "qwen2_vl")
	for _, device := range []string{"CPU", "NPU"} {
		t.Run(device, func(t *testing.T) {
			_, r := newTestEngine(t, device, Config{Device: device, ModelsDir: dir})
			red := npu.Image{Width: 1, Height: 1, RGB: []byte{255, 0, 0}}
			first := []npu.Message{{Role: "user", Content: "what is it?", Images: []npu.Image{red}}}
			before := testImagesEncoded()
			answer, _, err := run(t, r, &npu.Request{Model: "vlm", Messages: first})
			require.NoError(t, err)
			assert.Contains(t, answer, "I see 1x1 #ff0000.")
			next := append(first, npu.Message{Role: "assistant", Content: answer}, npu.Message{Role: "user", Content: "and its colour?"})
			answer, _, err = run(t, r, &npu.Request{Model: "vlm", Messages: next})
			require.NoError(t, err)
			assert.Contains(t, answer, "I see 1x1 #ff0000.", "the model still has the picture")
			assert.Equal(t, 1, testImagesEncoded()-before, "the picture was encoded once")

			// Another conversation starts over.
			_, _, err = run(t, r, &npu.Request{Model: "vlm", Messages: first})
			require.NoError(t, err)
			assert.Equal(t, 2, testImagesEncoded()-before)
		})
	}
}
