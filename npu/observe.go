package npu

import "time"

// Observer hears what the serving runtime (npu/serve) does, for metrics.
// Its methods must be cheap and must not block: TokenGap runs on the
// writer's goroutine between chunks.
type Observer interface {
	// ModelLoaded reports a load that succeeded.
	ModelLoaded(model, device string, took time.Duration)
	// TokenGap reports the time between two consecutive pieces of text
	// handed to a protocol writer: the inter-token latency a client sees,
	// coarser while a slow reader gets coalesced chunks.
	TokenGap(model, device string, gap time.Duration)
	// Prefill reports a finished generation's prompt: the tokens the
	// engine prefilled and those it reused from its conversation cache,
	// and what the request found in that cache when it got the engine.
	Prefill(model string, cache CacheResult, prefilled, reused int)
	// GenerationEnded reports each generation once, when the engine is
	// done with it (or it never got there), however many clients read it
	// and whichever protocol started it.
	GenerationEnded(GenerationReport)
	// Refused reports a request or work the router refused for its
	// tenant (ErrRateLimited, ErrTooManyStreams), whichever protocol asked.
	Refused(tenant string, err error)
	// TranscriptionEnded reports each transcription the engine ran, once.
	TranscriptionEnded(TranscriptionReport)
}

// GenerationReport is how a generation ended.
type GenerationReport struct {
	Model  string        // the served model's name
	Device string        // where it ran; "" if the engine never started it
	Tenant string        // who it counted against
	Queue  time.Duration // how long it waited for the engine; valid with Device
	Result Result        // valid when Err is nil
	Err    error         // why it failed: an engine error (npu.EngineError, ErrPanic inside), a timeout, a client that left, ...
}

// StreamStats describes a stream for logs and metrics once its writer is
// done with it.
type StreamStats struct {
	Model  string
	Device string // where the engine ran it; "" if it never started
	// Coalesced counts chunks the engine produced while the writer was
	// still behind, merged into one event instead of sent alone.
	Coalesced int
	// Queue is how long it waited for the engine (without the model
	// load once the engine returned); valid when Device is set.
	Queue    time.Duration
	Finished bool   // the engine returned
	Result   Result // valid when Finished
	Err      error  // the stream's failure, if any
	// ToolCallProblems says what is wrong with the tool calls the model
	// made (arguments that are not JSON, or not what the tool declared):
	// the calls went to the client anyway, for it to validate.
	ToolCallProblems []string
	// MaxTokensClamped is the completion limit the request's was lowered
	// to (Result.MaxTokensClamped), known when it was admitted or when the
	// engine returned; 0 otherwise.
	MaxTokensClamped int
}
