//go:build cgo

package openvino

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/openvino/ovtestlib"
	"github.com/npud/npud/npu/serve"
)

// writeWhisperModel makes a Whisper folder as optimum-intel exports one
// (the files GenAI's Whisper pipeline reads), multilingual with three
// languages, or English-only.
func writeWhisperModel(t testing.TB, models, name string, multilingual bool) {
	t.Helper()
	dir := filepath.Join(models, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	gen := `{"is_multilingual": false, "no_timestamps_token_id": 50362}`
	if multilingual {
		gen = `{"is_multilingual": true, "lang_to_id": {"<|de|>": 50261, "<|en|>": 50259, "<|fr|>": 50265},
		        "task_to_id": {"transcribe": 50359, "translate": 50358}, "no_timestamps_token_id": 50363}`
	}
	for file, content := range map[string]string{
		"openvino_encoder_model.xml": "<net/>", "openvino_encoder_model.bin": "",
		"openvino_decoder_model.xml": "<net/>", "openvino_decoder_model.bin": "",
		"openvino_tokenizer.xml": "<net/>", "openvino_detokenizer.xml": "<net/>",
		"config.json":            `{"model_type": "whisper", "max_source_positions": 1500}`,
		"generation_config.json": gen,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	}
}

// tone is seconds of a sine at freq Hz and peak amp, at 16 kHz.
func tone(freq, amp, seconds float64) []float32 {
	x := make([]float32, int(seconds*npu.AudioSampleRate))
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/npu.AudioSampleRate))
	}
	return x
}

func speechEngine(t testing.TB, devices string, cfg Config) (*Engine, *serve.Router) {
	t.Helper()
	models := modelsDir(t, "tiny")
	writeWhisperModel(t, models, "whisper", true)
	writeWhisperModel(t, models, "whisper-en", false)
	cfg.ModelsDir = models
	return newTestEngine(t, devices, cfg)
}

// Issue 30: the Whisper pipeline hears what npud hands it: the length,
// the level and the pitch of a tone, per 30-second window, with GenAI's
// chunks as segments; the language and the task reach it as GenAI takes
// them ("<|de|>", "translate"); the initial prompt too.
func TestWhisperHearsWhatItIsGiven(t *testing.T) {
	_, r := speechEngine(t, "CPU", Config{Device: "CPU"})
	ctx := context.Background()
	m, err := r.Model("whisper")
	require.NoError(t, err)
	assert.True(t, m.Details.Speech)
	assert.Equal(t, []string{"audio"}, npu.Capabilities(m))
	assert.Zero(t, m.ContextLength, "a speech model takes no prompt")

	out, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1.5), Task: npu.TaskTranscribe})
	require.NoError(t, err)
	assert.Equal(t, "1.50 seconds, level 0.354, pitch 440 Hz.", out.Text)
	assert.Equal(t, []npu.Segment{{Start: 0, End: 1.5, Text: "1.50 seconds, level 0.354, pitch 440 Hz."}}, out.Segments)

	out, err = r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper", Samples: tone(220, 0.25, 2), Task: npu.TaskTranscribe,
		Language: "de", Prompt: "Glossar: NPU"})
	require.NoError(t, err)
	assert.Equal(t, "de: 2.00 seconds, level 0.177, pitch 220 Hz.", out.Text)
	assert.Equal(t, "de", out.Language)
	assert.Equal(t, len("Glossar: NPU"), int(testHook("ovtest_last_whisper_prompt_bytes")))

	out, err = r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1), Task: npu.TaskTranslate})
	require.NoError(t, err)
	assert.Equal(t, "Translated: 1.00 seconds, level 0.354, pitch 440 Hz.", out.Text)
	assert.Equal(t, "en", out.Language)
	assert.Equal(t, -1, int(testHook("ovtest_last_whisper_prompt_bytes")), "no prompt: none set")

	// An English-only model takes neither a language nor a task.
	out, err = r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper-en", Samples: tone(440, 0.5, 1), Task: npu.TaskTranscribe, Language: "en"})
	require.NoError(t, err)
	assert.Equal(t, "1.00 seconds, level 0.354, pitch 440 Hz.", out.Text)
}

// Long audio goes through GenAI's own 30-second windows, one chunk each
// here; a chunk GenAI could not close (end -1) ends with the audio.
func TestWhisperLongAudioInWindows(t *testing.T) {
	_, r := speechEngine(t, "CPU", Config{Device: "CPU"})
	samples := append(tone(440, 0.5, 45), tone(880, 0.1, 25)...)
	out, err := r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: samples, Task: npu.TaskTranscribe})
	require.NoError(t, err)
	require.Len(t, out.Segments, 3)
	assert.Equal(t, npu.Segment{Start: 0, End: 30, Text: "30.00 seconds, level 0.354, pitch 440 Hz."}, out.Segments[0])
	assert.Equal(t, 30.0, out.Segments[1].Start)
	assert.InDelta(t, 60.0, out.Segments[1].End, 1e-4)
	assert.Contains(t, out.Segments[1].Text, "30.00 seconds")
	assert.InDelta(t, 70.0, out.Segments[2].End, 1e-4)
	assert.Equal(t, "10.00 seconds, level 0.071, pitch 880 Hz.", out.Segments[2].Text)

	t.Setenv("OVTEST_WHISPER_UNCLOSED", "1")
	out, err = r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 40), Task: npu.TaskTranscribe})
	require.NoError(t, err)
	require.Len(t, out.Segments, 2)
	assert.InDelta(t, 40.0, out.Segments[1].End, 1e-4, "the unclosed chunk ends with the audio, not at -1")
}

// What GenAI refuses is refused before it runs, as the client's error.
func TestWhisperRefusals(t *testing.T) {
	_, r := speechEngine(t, "CPU", Config{Device: "CPU"})
	ctx := context.Background()
	before := int(testHook("ovtest_whisper_generates"))
	for _, tc := range []struct {
		name  string
		req   npu.TranscribeRequest
		param string
	}{
		{"shorter than GenAI's minimum", npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 0.01)}, "file"},
		{"no audio", npu.TranscribeRequest{Model: "whisper"}, "file"},
		{"a language the model lacks", npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1), Language: "xx"}, "language"},
		{"English-only translating", npu.TranscribeRequest{Model: "whisper-en", Samples: tone(440, 0.5, 1), Task: npu.TaskTranslate}, "model"},
		{"English-only in French", npu.TranscribeRequest{Model: "whisper-en", Samples: tone(440, 0.5, 1), Language: "fr"}, "model"},
		{"a text model", npu.TranscribeRequest{Model: "tiny", Samples: tone(440, 0.5, 1)}, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			_, err := r.Transcribe(ctx, &req)
			var invalid *npu.InvalidRequestError
			require.ErrorAs(t, err, &invalid)
			if tc.param != "model" || tc.name != "English-only in French" {
				assert.Equal(t, tc.param, invalid.Param, "%v", err)
			}
		})
	}
	assert.Equal(t, before, int(testHook("ovtest_whisper_generates")), "nothing reached generate")

	// A speech model does not chat.
	_, err := r.Start(&npu.Request{Model: "whisper", Prompt: "hello"})
	var invalid *npu.InvalidRequestError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, err.Error(), "/v1/audio/transcriptions")
}

// On the NPU a Whisper pipeline gets none of the LLM properties npud sets
// there (GenAI passes them to the plugins as they are, and they fail the
// compile), an indexed NPU is compiled as "NPU", the only name GenAI's
// NPU path takes, and an initial prompt, which GenAI's 4-token NPU decoder
// prompt has no room for, is refused.
func TestWhisperOnTheNPU(t *testing.T) {
	for device, listed := range map[string]string{"NPU": "NPU,CPU", "NPU.0": "NPU.0,CPU"} {
		t.Run(device, func(t *testing.T) {
			e, r := speechEngine(t, listed, Config{Device: device, MaxPromptLen: 16384, MinResponseLen: 1024,
				PrefillHint: "DYNAMIC", GenerateHint: "BEST_PERF", PrefillChunkSize: 1024, PrefixCaching: true, CacheDir: t.TempDir()})
			out, err := r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1)})
			require.NoError(t, err)
			assert.Equal(t, "1.00 seconds, level 0.354, pitch 440 Hz.", out.Text)
			assert.Equal(t, device, e.DeviceOf("whisper"))
			before := int(testHook("ovtest_whisper_generates"))
			_, err = r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1), Prompt: "NPU"})
			var invalid *npu.InvalidRequestError
			require.ErrorAs(t, err, &invalid, "no room for an initial prompt in the NPU decoder's 4-token prompt")
			assert.Equal(t, "prompt", invalid.Param)
			assert.Equal(t, before, int(testHook("ovtest_whisper_generates")))
			_, _, err = run(t, r, &npu.Request{Model: "tiny", Prompt: "still a text model", MaxTokens: 3})
			require.NoError(t, err)
		})
	}
}

// A library without GenAI's Whisper functions still serves text models,
// and refuses a speech model naming what it lacks.
func TestLibraryWithoutWhisperServesText(t *testing.T) {
	dir, err := ovtestlib.Dir(ovtestlib.WithoutWhisper)
	require.NoError(t, err)
	lib, err := OpenLibrary(LibraryOptions{Path: dir})
	require.NoError(t, err)
	_, r := speechEngine(t, "CPU", Config{Device: "CPU", Library: lib})
	text, _, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "hello", MaxTokens: 3})
	require.NoError(t, err)
	assert.NotEmpty(t, text)
	_, err = r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ov_genai_whisper_pipeline_create")
}

// A multilingual model whose generation_config.json lists no languages is
// refused by GenAI whatever the request: the folder's fault, an engine
// error, not a 400.
func TestWhisperWithoutLanguagesIsTheModelsFault(t *testing.T) {
	models := modelsDir(t)
	writeWhisperModel(t, models, "whisper", true)
	require.NoError(t, os.WriteFile(filepath.Join(models, "whisper", "generation_config.json"), []byte(`{"is_multilingual": true}`), 0o644))
	_, r := newTestEngine(t, "CPU", Config{Device: "CPU", ModelsDir: models})
	_, err := r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1)})
	var engineErr *npu.EngineError
	require.ErrorAs(t, err, &engineErr)
	assert.Contains(t, err.Error(), "lang_to_id")
	var invalid *npu.InvalidRequestError
	assert.False(t, errors.As(err, &invalid))
}

// Speech models go where language models go: a named device, or under
// AUTO the NPU, then the GPU, then the CPU, the next one when a device
// fails to compile the model.
func TestWhisperDevices(t *testing.T) {
	for _, tc := range []struct{ device, listed, broken, want string }{
		{"CPU", "CPU", "", "CPU"},
		{"GPU", "GPU,CPU", "", "GPU"},
		{"AUTO", "NPU,GPU,CPU", "", "NPU"},
		{"AUTO", "NPU,GPU,CPU", "NPU", "GPU"},
		{"AUTO", "NPU,GPU,CPU", "NPU,GPU", "CPU"},
	} {
		t.Run(tc.device+" broken "+tc.broken, func(t *testing.T) {
			t.Setenv("OVTEST_BROKEN_DEVICES", tc.broken)
			e, r := speechEngine(t, tc.listed, Config{Device: tc.device})
			out, err := r.Transcribe(context.Background(), &npu.TranscribeRequest{Model: "whisper", Samples: tone(440, 0.5, 1)})
			require.NoError(t, err)
			assert.Equal(t, "1.00 seconds, level 0.354, pitch 440 Hz.", out.Text)
			assert.Equal(t, tc.want, e.DeviceOf("whisper"))
		})
	}
}

// The real-time factor of a transcription through the binding (time over
// the audio's length) for a minute of audio on the test library, whose
// Whisper "hears" without a network to run: what the figure measures is
// npud's side (the copy into GenAI, the pipeline call, the chunks back),
// a model of the overhead, not a Whisper's speed on any device.
//
//	go test -run '^$' -bench WhisperRealTimeFactor -benchtime 20x ./npu/openvino/
func BenchmarkWhisperRealTimeFactor(b *testing.B) {
	_, r := speechEngine(b, "CPU", Config{Device: "CPU"})
	samples := tone(440, 0.5, 60)
	ctx := context.Background()
	if _, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper", Samples: samples, Task: npu.TaskTranscribe}); err != nil {
		b.Fatal(err) // loads the model: not part of what is measured
	}
	b.ResetTimer()
	for range b.N {
		if _, err := r.Transcribe(ctx, &npu.TranscribeRequest{Model: "whisper", Samples: samples, Task: npu.TaskTranscribe}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/60, "rtf")
}
