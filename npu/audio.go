package npu

import (
	"context"
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
	return nil
}

// Transcribe runs req, admitted against its tenant's stream cap, while
// holding the engine's slot, through the same queue, limits and
// Retry-After as generations, on the model loaded through the lifecycle
// like a generation's. Engines that cannot transcribe give an error
// wrapping ErrNotSupported; models that cannot hear give an
// InvalidRequestError.
func (r *Router) Transcribe(ctx context.Context, req *TranscribeRequest) (Transcript, error) {
	if r.closing.Load() {
		return Transcript{}, ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	if err != nil {
		return Transcript{}, err
	}
	if res.upstream != nil {
		return Transcript{}, fmt.Errorf("model %q is served by an upstream; transcription is not relayed to upstreams yet: %w", req.Model, ErrNotSupported)
	}
	if !res.pool.engine.Describe().Transcribes {
		return Transcript{}, fmt.Errorf("engine %s does not transcribe audio: %w", res.pool.engine.Name(), ErrNotSupported)
	}
	if err := CheckSpeech(res.model); err != nil {
		return Transcript{}, err
	}
	release, err := r.admit(req.Tenant)
	if err != nil {
		return Transcript{}, err
	}
	defer release()
	req.Model = res.model.ID // an alias names the model the engine knows
	return res.pool.transcribe(ctx, req, res.model)
}

// transcribe runs req on m. The model is loaded outside the engine's slot,
// as for a generation (a compile must not hold up other models' streams),
// and kept loaded until the transcription ends; then its keep-alive starts.
func (p *Pool) transcribe(ctx context.Context, req *TranscribeRequest, m ModelInfo) (Transcript, error) {
	release, err := p.hold(ctx, m)
	if err != nil {
		return Transcript{}, err
	}
	defer release()
	var (
		out  Transcript
		took time.Duration
		ran  bool
	)
	err = p.withSlot(ctx, func() error {
		ran = true
		start := time.Now()
		var err error
		out, err = p.transcribeResident(ctx, m, req)
		took = time.Since(start)
		return err
	})
	if ran {
		p.cfg.Observer.TranscriptionEnded(TranscriptionReport{Model: m.ID, Device: p.deviceOf(m.ID), Task: req.Task,
			AudioSeconds: req.Seconds(), Took: took, Err: err})
	}
	return out, err
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
