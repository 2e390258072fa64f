//go:build cgo

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/openvino/ovtestlib"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// writeWhisperFolder makes a Whisper model folder as optimum-intel exports
// one (the files GenAI's Whisper pipeline reads), multilingual or
// English-only.
func writeWhisperFolder(t *testing.T, models, name string, multilingual bool, extra ...string) {
	t.Helper()
	dir := filepath.Join(models, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	gen := `{"is_multilingual": false}`
	if multilingual {
		gen = `{"is_multilingual": true, "lang_to_id": {"<|de|>": 50261, "<|en|>": 50259}}`
	}
	files := map[string]string{
		"openvino_encoder_model.xml": "<net/>", "openvino_encoder_model.bin": "e",
		"openvino_decoder_model.xml": "<net/>", "openvino_decoder_model.bin": "d",
		"openvino_tokenizer.xml": "<net/>", "openvino_detokenizer.xml": "<net/>",
		"config.json": `{"model_type": "whisper"}`, "generation_config.json": gen,
	}
	for _, f := range extra {
		files[f] = ""
	}
	for file, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	}
}

// whisperHeard is what the test library's Whisper says it heard in a
// window (audiotest.Heard).
type whisperHeard struct{ seconds, level, pitch float64 }

func parseWhisperHeard(t *testing.T, text string) whisperHeard {
	h := audiotest.ParseHeard(t, text)
	return whisperHeard{h.Seconds, h.Level, h.Pitch}
}

func openaiClient(t *testing.T, base string) openai.Client {
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(&http.Client{Transport: transport}), option.WithMaxRetries(0))
}

func audioContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wavUpload(data []byte) io.Reader {
	return openai.File(bytes.NewReader(data), "audio.wav", "audio/wav")
}

// Issue 30, on the OpenVINO engine through the test library, in its worker
// process: openai-go's Audio.Transcriptions in every response format. The
// audio is a 65 s stereo tone at 22.05 kHz: the test model hears the length,
// level and pitch of each of GenAI's 30-second windows, so a wrong
// resampling moves the pitch and the length, wrong channel mixing or
// scaling the level; the segments are GenAI's chunks.
func TestOpenVINOTranscriptionFormats(t *testing.T) {
	dir := t.TempDir()
	daemontest.WriteOpenVINOModel(t, dir, "text")
	writeWhisperFolder(t, dir, "whisper", true)
	srv := startOpenVINOFolder(t, dir)
	client := openaiClient(t, srv.URL)
	tone := wavtest.Tone(440, 0.5, 65, 22050)
	wav := wavtest.Encode([][]float64{tone, tone}, 22050, wavtest.PCM16)

	t.Run("verbose_json", func(t *testing.T) {
		resp, err := client.Audio.Transcriptions.New(audioContext(t), openai.AudioTranscriptionNewParams{
			File: wavUpload(wav), Model: "whisper", ResponseFormat: openai.AudioResponseFormatVerboseJSON,
			Language: openai.String("de"), TimestampGranularities: []string{"segment"}})
		require.NoError(t, err)
		v := resp.AsTranscriptionVerbose()
		assert.InDelta(t, 65, v.Duration, 0.01)
		assert.Equal(t, "de", v.Language)
		assert.True(t, strings.HasPrefix(v.Text, "de: 30.00 seconds"), "the language reached GenAI as <|de|>: %q", v.Text)
		require.Len(t, v.Segments, 3)
		for i, want := range [][2]float64{{0, 30}, {30, 60}, {60, 65}} {
			s := v.Segments[i]
			assert.InDelta(t, want[0], s.Start, 1e-4)
			assert.InDelta(t, want[1], s.End, 1e-4)
			h := parseWhisperHeard(t, s.Text)
			assert.InDelta(t, want[1]-want[0], h.seconds, 0.01)
			assert.InDelta(t, 0.354, h.level, 0.003, "both channels mixed at their level")
			assert.InDelta(t, 440, h.pitch, 2, "resampled from 22.05 kHz to 16 kHz")
		}
	})
	t.Run("json", func(t *testing.T) {
		resp, err := client.Audio.Transcriptions.New(audioContext(t), openai.AudioTranscriptionNewParams{
			File: wavUpload(wav), Model: "whisper", ResponseFormat: openai.AudioResponseFormatJSON})
		require.NoError(t, err)
		assert.Len(t, audiotest.HeardWords.FindAllString(resp.Text, -1), 3)
		assert.False(t, strings.HasPrefix(resp.Text, " "), "GenAI's leading space is trimmed: %q", resp.Text)
	})
	raw := func(t *testing.T, format openai.AudioResponseFormat) (http.Header, string) {
		var hr *http.Response
		_, err := client.Audio.Transcriptions.New(audioContext(t), openai.AudioTranscriptionNewParams{
			File: wavUpload(wav), Model: "whisper", ResponseFormat: format}, option.WithResponseBodyInto(&hr))
		require.NoError(t, err)
		defer hr.Body.Close()
		b, err := io.ReadAll(hr.Body)
		require.NoError(t, err)
		return hr.Header, string(b)
	}
	t.Run("text", func(t *testing.T) {
		hdr, body := raw(t, openai.AudioResponseFormatText)
		assert.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "text/plain"))
		assert.Regexp(t, `^30.00 seconds, level 0.35[0-9], pitch 44[01] Hz\. 30.00 seconds, .* 5.00 seconds, level 0.35[0-9], pitch 44[01] Hz\.\n$`, body)
		assert.Empty(t, hdr.Get("X-Npud-Simulated"))
	})
	t.Run("srt", func(t *testing.T) {
		_, body := raw(t, openai.AudioResponseFormatSRT)
		assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:30,000\n30.00 seconds, [^\n]+\n\n`+
			`2\n00:00:30,000 --> 00:01:00,000\n30.00 seconds, [^\n]+\n\n`+
			`3\n00:01:00,000 --> 00:01:05,000\n5.00 seconds, [^\n]+\n\n$`, body)
	})
	t.Run("vtt", func(t *testing.T) {
		hdr, body := raw(t, openai.AudioResponseFormatVTT)
		assert.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "text/vtt"))
		assert.Regexp(t, `^WEBVTT\n\n00:00:00.000 --> 00:00:30.000\n30.00 seconds, [^\n]+\n\n`+
			`00:00:30.000 --> 00:01:00.000\n[^\n]+\n\n00:01:00.000 --> 00:01:05.000\n5.00 seconds, [^\n]+\n\n$`, body)
	})
	t.Run("translation", func(t *testing.T) {
		//nolint:staticcheck // OpenAI deprecates translations in the SDK, but clients still call them and npud serves them
		tr, err := client.Audio.Translations.New(audioContext(t), openai.AudioTranslationNewParams{File: wavUpload(wav), Model: "whisper"})
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(tr.Text, "Translated: 30.00 seconds"), "the task reached GenAI: %q", tr.Text)
	})
}

// Speech made by Debian's espeak-ng goes through openai-go to the
// OpenVINO engine, heard whole.
func TestOpenVINOTranscriptionEspeak(t *testing.T) {
	path, clip := audiotest.SpeechClip(t)
	wav, err := os.ReadFile(path)
	require.NoError(t, err)

	dir := t.TempDir()
	writeWhisperFolder(t, dir, "whisper", true)
	client := openaiClient(t, startOpenVINOFolder(t, dir).URL)
	resp, err := client.Audio.Transcriptions.New(audioContext(t), openai.AudioTranscriptionNewParams{
		File: wavUpload(wav), Model: "whisper", ResponseFormat: openai.AudioResponseFormatVerboseJSON})
	require.NoError(t, err)
	v := resp.AsTranscriptionVerbose()
	h := parseWhisperHeard(t, v.Text)
	assert.InDelta(t, clip.Duration().Seconds(), v.Duration, 0.001)
	assert.InDelta(t, clip.Duration().Seconds(), h.seconds, 0.01)
	assert.Greater(t, h.level, 0.02, "speech is heard, not silence")
	require.Len(t, v.Segments, 1)
	assert.InDelta(t, clip.Duration().Seconds(), v.Segments[0].End, 0.02)
}

// Issue 30: the same speech through the official OpenAI Python client to
// the OpenVINO engine on the test library (GenAI's Whisper pipeline, in a
// worker process), in every response format, translated and streamed
// (GenAI's C pipeline has no streamer: the deltas come at the end).
func TestOpenVINOTranscriptionPython(t *testing.T) {
	path, clip := audiotest.SpeechClip(t)
	dir := t.TempDir()
	writeWhisperFolder(t, dir, "whisper", true)
	srv := startOpenVINOFolder(t, dir)
	r := daemontest.PythonTranscription(t, srv.URL, "whisper", path, clip.Duration().Seconds())
	h := parseWhisperHeard(t, r["json"].(string))
	assert.InDelta(t, clip.Duration().Seconds(), h.seconds, 0.01)
	assert.Greater(t, h.level, 0.02, "speech is heard, not silence")
}

// What GenAI's Whisper refuses is a 400 in OpenAI's shape, and a speech
// model is listed as one and does not chat.
func TestOpenVINOTranscriptionRefusals(t *testing.T) {
	dir := t.TempDir()
	daemontest.WriteOpenVINOModel(t, dir, "text")
	writeWhisperFolder(t, dir, "whisper", true)
	writeWhisperFolder(t, dir, "whisper-en", false)
	c := daemontest.NewClient(t, startOpenVINOFolder(t, dir).URL)
	second := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)
	for _, tc := range []struct {
		name, model, path string
		wav               []byte
		fields            []string
		param, says       string
	}{
		{"a language the model lacks", "whisper", "/v1/audio/transcriptions", second, []string{"language", "fr"}, "language", "lang_to_id"},
		{"English-only translating", "whisper-en", "/v1/audio/translations", second, nil, "model", "English-only"},
		{"English-only in German", "whisper-en", "/v1/audio/transcriptions", second, []string{"language", "de"}, "language", "English only"},
		{"too short for GenAI", "whisper", "/v1/audio/transcriptions",
			wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 0.005, 16000)}, 16000, wavtest.PCM16), nil, "file", "needs more than 200"},
		{"a text model", "text", "/v1/audio/transcriptions", second, nil, "model", "not a speech"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := postAudio(t, c, tc.path, tc.wav, append([]string{"model", tc.model}, tc.fields...)...)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
			var e struct {
				Error struct{ Type, Param, Message string }
			}
			require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Equal(t, tc.param, e.Error.Param)
			assert.Contains(t, e.Error.Message, tc.says)
		})
	}

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"whisper","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "/v1/audio/transcriptions")
	resp, raw = c.Do(t, http.MethodPost, "/api/generate", `{"model":"whisper","prompt":"hi","stream":false}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "speech (Whisper) model")

	_, raw = c.Do(t, http.MethodGet, "/v1/models", "")
	var models struct {
		Data []struct {
			ID           string   `json:"id"`
			Capabilities []string `json:"capabilities"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &models), "%s", raw)
	caps := map[string][]string{}
	for _, m := range models.Data {
		caps[m.ID] = m.Capabilities
	}
	assert.Equal(t, []string{"audio"}, caps["whisper"], "%s", raw)
	assert.Contains(t, caps["text"], "completion")
	_, raw = c.Do(t, http.MethodPost, "/api/show", `{"model":"whisper"}`)
	assert.Contains(t, string(raw), `"capabilities":["audio"]`)
}

// A worker that dies transcribing ends that transcription with a
// retryable engine_crashed (503); the next one restarts the worker, loads
// the model again and is heard.
func TestOpenVINOTranscriptionWorkerCrash(t *testing.T) {
	dir := t.TempDir()
	writeWhisperFolder(t, dir, "whisper", true, "crash_on_transcribe")
	srv := startOpenVINOFolder(t, dir)
	c := daemontest.NewClient(t, srv.URL)
	wav := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)

	resp, raw := postAudio(t, c, "/v1/audio/transcriptions", wav, "model", "whisper", "response_format", "text")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "engine_crashed")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	h := daemontest.Health(t, c.HTTP, srv.URL)
	assert.EqualValues(t, 1, h["worker_restarts"])

	require.NoError(t, os.Remove(filepath.Join(dir, "whisper", "crash_on_transcribe")))
	// The next request waits out the restart backoff, restarts the worker
	// and loads the model again.
	resp, raw = postAudio(t, c, "/v1/audio/transcriptions", wav, "model", "whisper", "response_format", "text")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Equal(t, "1.00 seconds, level 0.354, pitch 440 Hz.\n", string(raw))
}

// A GenAI library without the Whisper functions still serves text models;
// a speech model is refused, naming what the library lacks.
func TestOpenVINOLibraryWithoutWhisper(t *testing.T) {
	lib := ovtestlib.Require(t, ovtestlib.WithoutWhisper)
	dir := t.TempDir()
	daemontest.WriteOpenVINOModel(t, dir, "text")
	writeWhisperFolder(t, dir, "whisper", true)
	t.Setenv("OVTEST_DEVICES", "CPU")
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.ModelsDir, cfg.Device, cfg.CacheDir = "openvino", dir, "CPU", ""
	cfg.OpenVINOLib, cfg.Isolation = lib, "process"
	c := daemontest.NewClient(t, daemontest.Start(t, cfg, nil).URL)

	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"text","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	wav := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)
	resp, raw = postAudio(t, c, "/v1/audio/transcriptions", wav, "model", "whisper")
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), "ov_genai_whisper_pipeline_create", "the error names the missing function")
}
