package modelstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
	"github.com/npud/npud/npu/hub/hubtest"
)

// whisperFiles are an OpenVINO/whisper-*-ov repository's files (as the
// hub lists them for OpenVINO/whisper-tiny-fp16-ov), with stand-in
// contents.
var whisperFiles = map[string]string{
	"added_tokens.json": "{}", "config.json": `{"model_type": "whisper", "d_model": 384}`,
	"generation_config.json": `{"is_multilingual": true, "lang_to_id": {"<|en|>": 50259}}`,
	"merges.txt":             "", "normalizer.json": "{}", "preprocessor_config.json": `{"sampling_rate": 16000}`,
	"openvino_encoder_model.xml": "<net/>", "openvino_encoder_model.bin": "enc",
	"openvino_decoder_model.xml": "<net/>", "openvino_decoder_model.bin": "dec",
	"openvino_tokenizer.xml": "<net/>", "openvino_tokenizer.bin": "tok",
	"openvino_detokenizer.xml": "<net/>", "openvino_detokenizer.bin": "detok",
	"special_tokens_map.json": "{}", "tokenizer.json": "{}",
	"tokenizer_config.json": `{"chat_template": "{{ tools }}<tool_call><think>"}`,
	"vocab.json":            "{}",
}

// Issue 30: `npud pull OpenVINO/whisper-…-ov` brings every file of a
// Whisper repository, and the folder is a speech model: listed, described
// as speech only (whatever its tokenizer_config.json says), complete for
// doctor.
func TestPullAndDescribeAWhisperModel(t *testing.T) {
	srv := hubtest.Serve(t, "OpenVINO/whisper-tiny.en-fp16-ov", whisperFiles)
	dir := t.TempDir()
	s := New(dir, &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	require.NoError(t, s.Pull(t.Context(), "OpenVINO/whisper-tiny.en-fp16-ov", nil))
	models, err := s.Scan(0)
	require.NoError(t, err)
	require.Len(t, models, 1)
	m := models[0]
	assert.Equal(t, "whisper-tiny.en-fp16-ov", m.ID)
	assert.True(t, m.Details.Speech)
	assert.True(t, m.Details.SpeechOnly)
	assert.Equal(t, "whisper", m.Details.Architecture)
	assert.Equal(t, "FP16", m.Details.Quantization)
	assert.Empty(t, m.Details.ToolFormat, "a speech model takes no tools")
	assert.False(t, m.Details.Thinking)
	assert.Equal(t, []string{"audio"}, npu.Capabilities(m))
	folder := s.Path(m.ID)
	for file := range whisperFiles {
		assert.FileExists(t, filepath.Join(folder, file))
	}
	assert.True(t, IsSpeechModel(folder))
	assert.Empty(t, MissingSpeechFiles(folder))

	require.NoError(t, os.Remove(filepath.Join(folder, "generation_config.json")))
	require.NoError(t, os.Remove(filepath.Join(folder, "openvino_detokenizer.xml")))
	assert.Equal(t, []string{"openvino_detokenizer.xml (the detokenizer)", "generation_config.json (the languages and tasks, lang_to_id)"},
		MissingSpeechFiles(folder))

	require.NoError(t, os.Remove(filepath.Join(folder, WhisperDecoderIR)))
	assert.False(t, IsSpeechModel(folder), "an encoder alone is no Whisper")
	models, err = s.Scan(0)
	require.NoError(t, err)
	assert.Empty(t, models, "nor a model")
}

// A repository with only half of Whisper's IR is not pulled.
func TestPullRefusesAnEncoderAlone(t *testing.T) {
	srv := hubtest.Serve(t, "OpenVINO/half-ov", map[string]string{"openvino_encoder_model.xml": "<net/>"})
	s := New(t.TempDir(), &hub.Client{Endpoint: srv.URL, Backoff: time.Millisecond})
	err := s.Pull(t.Context(), "OpenVINO/half-ov", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openvino_decoder_model.xml")
}
