package npu

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each is returned wrapped; classify with errors.Is.
var (
	// ErrModelNotFound is returned by Router.Start for a model no engine serves.
	ErrModelNotFound = errors.New("model not found")
	// ErrQueueFull is returned by Router.Start when the wait queue is at its
	// maximum depth. It is retryable.
	ErrQueueFull = errors.New("queue full")
	// ErrQueueTimeout ends a stream whose request waited longer than the
	// maximum queue wait. It is retryable.
	ErrQueueTimeout = errors.New("timed out waiting in queue")
	// ErrTokenTimeout ends a stream when the engine produced nothing for the
	// inter-token timeout.
	ErrTokenTimeout = errors.New("timed out waiting for the next token")
	// ErrSlowConsumer ends a stream whose reader fell so far behind that the
	// pending text passed the hard limit. It is retryable.
	ErrSlowConsumer = errors.New("client is reading too slowly: pending output exceeded the limit")
	// ErrClientGone ends a stream whose client went away.
	ErrClientGone = errors.New("client went away")
	// ErrKeyRevoked ends the streams of an API key a reload revoked (the
	// cause of their requests' contexts): they end with an error, not as
	// a client that left.
	ErrKeyRevoked = errors.New("the API key was revoked")
	// ErrShuttingDown refuses new requests while the daemon drains, and ends
	// streams still running when the drain timeout passes. It is retryable.
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrContextLength is returned (wrapped) by engines when the prompt plus
	// the requested completion does not fit the model's context.
	ErrContextLength = errors.New("context length exceeded")
	// ErrNotSupported is returned (wrapped) for an operation the engine or
	// model cannot do, such as embeddings or pulling models.
	ErrNotSupported = errors.New("not supported")
	// ErrPromptNotCounted is returned (wrapped) by Engine.CountPrompt for a
	// model whose prompts npud does not count before generating: GenAI
	// renders them from its template, an upstream serves the model, or the
	// engine counts no prompts. Its size is known only after a generation.
	// It wraps ErrNotSupported (a 501, as that is, where an API shows it;
	// Anthropic's count_tokens answers an estimate instead).
	ErrPromptNotCounted = fmt.Errorf("npud does not count this model's prompts before generating: %w", ErrNotSupported)
	// ErrTooManyStreams is returned by the Router when the tenant of a
	// piece of work already runs or queues its maximum (generations,
	// embeddings and transcriptions together). It is retryable (a 429).
	ErrTooManyStreams = errors.New("too many concurrent streams for this tenant")
	// ErrRateLimited is wrapped by a RateLimitError: the tenant made more
	// requests than its rate allows. It is retryable (a 429).
	ErrRateLimited = errors.New("over the rate limit")
	// ErrPanic is wrapped (inside an EngineError) when an engine, or the
	// stream callback it called, panicked: metrics count it apart from
	// failed calls.
	ErrPanic = errors.New("panic")
	// ErrEngineCrashed ends the generations of an engine worker process
	// that died (a segfault, an abort, an OOM kill). It is retryable: the
	// worker is restarted.
	ErrEngineCrashed = errors.New("crashed")
	// ErrEngineHung ends the generations of an engine worker process that
	// stopped calling back; it was killed. It is retryable.
	ErrEngineHung = errors.New("hung")
	// ErrDeviceUnhealthy refuses work for an explicitly configured device
	// that crashed or hung too often, until it is probed again. Retryable.
	ErrDeviceUnhealthy = errors.New("device unhealthy")
	// ErrUpstreamUnavailable: the upstream server a model is relayed to
	// cannot be reached or is out of rotation. Retryable.
	ErrUpstreamUnavailable = errors.New("upstream unavailable")
	// ErrEngineCrashedOnRequest refuses a request that crashed (or hung)
	// an engine worker more than once: sent again it would only crash the
	// worker again. Not retryable.
	ErrEngineCrashedOnRequest = errors.New("this request crashed the engine more than once")
	// ErrCrashThrottled refuses a tenant whose requests keep crashing
	// engine workers, until its crashes age out of the window. Retryable
	// after that (a 429).
	ErrCrashThrottled = errors.New("this tenant's requests keep crashing the engine")
	// ErrResumeExpired: the events a reader asked to resume from are no
	// longer kept (npu/journal).
	ErrResumeExpired = errors.New("the events to resume from are no longer kept")
	// ErrStreamAbandoned is the outcome of a generation stopped because
	// every reader had left (npu/journal): a reader that comes later gets
	// an error and its terminator, not the silence owed to a client that
	// went away.
	ErrStreamAbandoned = errors.New("the generation was stopped before it finished: every reader had left")
	// ErrStreamCancelled ends the stream for every reader when the client
	// that started the generation cancelled it (npu/journal).
	ErrStreamCancelled = errors.New("the generation was cancelled by the client that started it")
	// ErrModelLost: the engine no longer holds the model (its worker
	// process died). A job it ended also wraps the crash's or the hang's
	// class, which the client sees; alone, it says the model was found
	// gone before the job started, so nothing of the job ran. Either way
	// the lifecycle forgets the model and the next acquire loads it again
	// (npu/serve/residency.go). Retryable.
	ErrModelLost = errors.New("the model is no longer loaded")
	// ErrStructuredOutput ends a stream whose answer left the structured
	// output the request asked for (Request.Format), or ended before its
	// document was whole (max_tokens reached mid-document): the client
	// has the valid prefix, never text past it. A server error, as
	// OpenAI's own "the model produced invalid content" is (a 500), and
	// not retryable: the same request generates the same answer.
	ErrStructuredOutput = errors.New("the answer does not match the requested format")
)

// Class is what every layer says of an error: the APIs (each in its own
// error shape), the WebSocket, the admin routes, the metrics and the logs,
// and the worker processes, whose errors cross to the daemon by code and
// are rebuilt with the same class. The HTTP status is the edge's
// (wire/errclass), not the engine's.
type Class struct {
	Code      string // OpenAI's error.code, the metrics' and logs' name, the name across processes
	Server    bool   // the server's fault, not the request's
	Retryable bool   // the same request may be sent again, after Retry-After
}

// Codes of errors no sentinel names.
const (
	CodeEngineError   = "engine_error"   // an *EngineError
	CodeInternalError = "internal_error" // anything else
)

// classes is the one error table. Where an error wraps several sentinels
// the first listed classifies it: a revoked key before the client that is
// gone with it, a panic before the engine error around it, a request
// refused for crashing the engine before the crash.
var classes = []struct {
	err   error
	class Class
}{
	{ErrPanic, Class{Code: "engine_panic", Server: true}},
	{ErrKeyRevoked, Class{Code: "key_revoked"}},
	{ErrInvalidRequest, Class{Code: "invalid_value"}},
	{ErrModelNotFound, Class{Code: "model_not_found"}},
	{ErrContextLength, Class{Code: "context_length_exceeded"}},
	// Before ErrNotSupported, which it wraps: its own name crosses from
	// the workers, so the daemon still knows the count was not made.
	{ErrPromptNotCounted, Class{Code: "prompt_not_counted"}},
	{ErrNotSupported, Class{Code: "not_supported"}},
	{ErrTooManyStreams, Class{Code: "too_many_streams", Retryable: true}},
	{ErrRateLimited, Class{Code: "rate_limit_exceeded", Retryable: true}},
	{ErrQueueFull, Class{Code: "queue_full", Server: true, Retryable: true}},
	{ErrQueueTimeout, Class{Code: "queue_timeout", Server: true, Retryable: true}},
	{ErrShuttingDown, Class{Code: "shutting_down", Server: true, Retryable: true}},
	{ErrSlowConsumer, Class{Code: "slow_consumer", Server: true, Retryable: true}},
	{ErrResumeExpired, Class{Code: "resume_expired"}},
	{ErrStreamAbandoned, Class{Code: "stream_abandoned"}},
	{ErrStreamCancelled, Class{Code: "cancelled"}},
	{ErrTokenTimeout, Class{Code: "token_timeout", Server: true}},
	{ErrClientGone, Class{Code: "client_closed"}},
	// A request that crashed the engine twice is not retryable: SDKs
	// retry server errors on their own, and it would only crash it again.
	{ErrEngineCrashedOnRequest, Class{Code: "engine_crashed_on_request", Server: true}},
	{ErrCrashThrottled, Class{Code: "crash_throttled", Retryable: true}},
	{ErrEngineCrashed, Class{Code: "engine_crashed", Server: true, Retryable: true}},
	{ErrDeviceUnhealthy, Class{Code: "device_unhealthy", Server: true, Retryable: true}},
	{ErrUpstreamUnavailable, Class{Code: "upstream_unavailable", Server: true, Retryable: true}},
	{ErrEngineHung, Class{Code: "engine_hung", Server: true, Retryable: true}},
	{ErrStructuredOutput, Class{Code: "structured_output_failed", Server: true}},
	// Last: a crash or a hang that lost the model keeps its own class.
	{ErrModelLost, Class{Code: CodeModelLost, Server: true, Retryable: true}},
}

// CodeModelLost is ErrModelLost's code: the model was found gone before a
// job started (an error of no other class).
const CodeModelLost = "model_lost"

// Classify finds err's class in the table: its first sentinel's, else an
// engine error's, else an internal error's.
func Classify(err error) Class {
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.class
		}
	}
	var engineErr *EngineError
	if errors.As(err, &engineErr) {
		return Class{Code: CodeEngineError, Server: true}
	}
	return Class{Code: CodeInternalError, Server: true}
}

// Classes lists every class the table and Classify can give, for the
// edges to check they render each one (wire/errclass).
func Classes() []Class {
	out := make([]Class, 0, len(classes)+2)
	for _, c := range classes {
		out = append(out, c.class)
	}
	return append(out, Class{Code: CodeEngineError, Server: true}, Class{Code: CodeInternalError, Server: true})
}

// ErrorCode is err's class's code: a sentinel's name, or CodeEngineError
// or CodeInternalError.
func ErrorCode(err error) string { return Classify(err).Code }

// Sentinel is the sentinel whose class has code, nil for none.
func Sentinel(code string) error {
	for _, c := range classes {
		if c.class.Code == code {
			return c.err
		}
	}
	return nil
}

// EngineError is a failure inside an engine. The API layers report it as a
// server error; Cause says what failed.
type EngineError struct {
	Engine string
	Cause  error
}

func (e *EngineError) Error() string { return fmt.Sprintf("engine %s: %v", e.Engine, e.Cause) }
func (e *EngineError) Unwrap() error { return e.Cause }

// ErrInvalidRequest is wrapped by InvalidRequestError: a request the engine
// would refuse, found before it reached the engine or named by it.
var ErrInvalidRequest = errors.New("invalid request")

// InvalidRequestError is a request parameter outside what the engine
// accepts. Param names it as the client sent it (top_p, messages[2].content);
// the API layers render it in their protocol's shape as a 400.
type InvalidRequestError struct {
	Param   string
	Message string
}

func (e *InvalidRequestError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *InvalidRequestError) Is(target error) bool { return target == ErrInvalidRequest }
