package sim

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/npud/npud/npu"
)

// WindowSeconds is how much audio one segment covers: Whisper's 30-second
// window (openvino.genai src/cpp/src/whisper/ works through the audio in
// windows of the feature extractor's 30 s chunk).
const WindowSeconds = 30

// Heard is what the simulated engine measures of a stretch of audio.
type Heard struct {
	Seconds float64
	RMS     float64 // root mean square, full scale = 1
	PitchHz float64 // from the upward zero crossings; 0 for silence
}

// Hear measures samples (mono, 16 kHz). A tone's pitch comes out as its
// frequency, so a clip resampled at the wrong rate is heard off pitch, a
// channel mixed wrong is heard at the wrong level.
func Hear(samples []float32) Heard {
	h := Heard{Seconds: float64(len(samples)) / npu.AudioSampleRate}
	if len(samples) == 0 {
		return h
	}
	var sum float64
	crossings, first, last := 0, -1, -1
	for i, v := range samples {
		sum += float64(v) * float64(v)
		if i > 0 && samples[i-1] < 0 && v >= 0 {
			crossings++
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	h.RMS = math.Sqrt(sum / float64(len(samples)))
	if crossings > 1 && h.RMS > 1e-4 {
		h.PitchHz = float64(crossings-1) * npu.AudioSampleRate / float64(last-first)
	}
	return h
}

// Words is how the simulated engine says what it heard: deterministic for
// the same audio, and readable by tests.
func (h Heard) Words() string {
	level := "silence"
	if h.RMS > 1e-4 {
		level = fmt.Sprintf("level %.3f", h.RMS)
	}
	pitch := ""
	if h.PitchHz > 0 {
		pitch = fmt.Sprintf(", pitch %.0f Hz", h.PitchHz)
	}
	return fmt.Sprintf("%.2f seconds, %s%s.", h.Seconds, level, pitch)
}

// Transcribe implements npu.Engine with what the engine measures in
// each 30-second window, said in words: no speech is recognised.
func (e *Engine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	if len(req.Samples) == 0 {
		return npu.Transcript{}, &npu.InvalidRequestError{Param: "file", Message: "the audio has no samples"}
	}
	lang := req.Language
	if lang == "" {
		lang = "en"
	}
	if req.Task == npu.TaskTranslate {
		lang = "en" // Whisper translates into English
	}
	var out npu.Transcript
	out.Language = lang
	window := WindowSeconds * npu.AudioSampleRate
	var texts []string
	for start := 0; start < len(req.Samples); start += window {
		if err := ctx.Err(); err != nil {
			return npu.Transcript{}, err
		}
		end := min(start+window, len(req.Samples))
		words := Hear(req.Samples[start:end]).Words()
		if start == 0 && req.Task == npu.TaskTranslate {
			words = "Translated: " + words
		}
		out.Segments = append(out.Segments, npu.Segment{
			Start: float64(start) / npu.AudioSampleRate, End: float64(end) / npu.AudioSampleRate, Text: words})
		texts = append(texts, words)
	}
	out.Text = strings.Join(texts, " ")
	return out, nil
}
