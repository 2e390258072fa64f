package npu

import (
	"fmt"
	"time"
)

// Transcription tasks, as Whisper names them (GenAI's
// ov_genai_whisper_generation_config_set_task takes "transcribe" or
// "translate": openvino.genai src/c/include/openvino/genai/c/whisper_generation_config.h).
const (
	TaskTranscribe = "transcribe"
	TaskTranslate  = "translate" // into English
)

// AudioSampleRate is the rate of TranscribeRequest.Samples: Whisper's.
const AudioSampleRate = 16000

// TranscribeRequest is one speech-to-text job.
type TranscribeRequest struct {
	Model       string
	Samples     []float32 // mono, AudioSampleRate Hz, in [-1, 1]
	Task        string    // TaskTranscribe or TaskTranslate
	Language    string    // ISO-639-1 ("en"), or "" to detect
	Prompt      string    // initial prompt: spelling, style, the previous text
	Temperature float64
	// Tenant is who the work counts against, with its generations and
	// embeddings ("" counts against nobody).
	Tenant string
	// OnSegment, when set, hears each segment as soon as the engine has
	// it, for streamed transcriptions; it is called from the engine's
	// goroutine, in order, and must not block. An engine that learns its
	// segments only at the end (GenAI's C Whisper pipeline takes no
	// streamer; a worker process returns them whole) does not call it:
	// the caller takes them from the Transcript. gob leaves func fields
	// out, so it never crosses to a worker.
	OnSegment func(Segment)
}

// Seconds is how long the audio plays.
func (r *TranscribeRequest) Seconds() float64 {
	return float64(len(r.Samples)) / AudioSampleRate
}

// Transcript is what an engine heard.
type Transcript struct {
	Text     string
	Language string // detected or given; "" when unknown
	Segments []Segment
}

// Segment is a piece of a transcript with its place in the audio.
type Segment struct {
	Start, End float64 // seconds
	Text       string
}

// CheckSpeech refuses a model that cannot hear.
func CheckSpeech(m ModelInfo) error {
	if !m.Details.Speech {
		return &InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q does not transcribe audio: it is not a speech (Whisper) model", m.ID)}
	}
	return nil
}

// CheckGenerates refuses a prompt or chat for a speech-only model
// (Whisper), which only transcribes: a 400 naming the endpoint it serves.
func CheckGenerates(m ModelInfo) error {
	if m.Details.SpeechOnly {
		return &InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is a speech (Whisper) model: it transcribes audio at /v1/audio/transcriptions and /v1/audio/translations, "+
				"and takes no prompts or chat messages", m.ID)}
	}
	if m.Details.EmbeddingOnly {
		return &InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is an embedding model: it embeds text at /v1/embeddings and /api/embed, "+
				"and takes no prompts or chat messages", m.ID)}
	}
	if m.Details.RerankOnly {
		return &InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is a rerank model: it reranks documents at /v1/rerank, "+
				"and takes no prompts or chat messages", m.ID)}
	}
	return nil
}

// TranscriptionReport is how a transcription went on the engine.
type TranscriptionReport struct {
	Model, Device string
	Task          string  // TaskTranscribe or TaskTranslate
	AudioSeconds  float64 // how long the audio plays
	Took          time.Duration
	Err           error
}

// RealTimeFactor is the engine's time over the audio's: below 1 is
// faster than real time.
func (t TranscriptionReport) RealTimeFactor() float64 {
	if t.AudioSeconds <= 0 {
		return 0
	}
	return t.Took.Seconds() / t.AudioSeconds
}
