package npu

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each is returned wrapped; classify with errors.Is.
var (
	// ErrModelNotFound is returned by Runner.Start for a model no engine serves.
	ErrModelNotFound = errors.New("model not found")
	// ErrQueueFull is returned by Runner.Start when the wait queue is at its
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
	// ErrTooManyStreams is returned by Runner.Start when the request's
	// tenant already runs or queues its maximum of generations. It is
	// retryable (a 429).
	ErrTooManyStreams = errors.New("too many concurrent streams for this tenant")
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
)

// sentinels names every sentinel error, so that an error can cross a
// process boundary (npu/worker) by name and be rebuilt with the same
// class. Where an error wraps several, the first listed names it.
var sentinels = []struct {
	code string
	err  error
}{
	{"panic", ErrPanic},
	{"engine_crashed_on_request", ErrEngineCrashedOnRequest},
	{"crash_throttled", ErrCrashThrottled},
	{"engine_crashed", ErrEngineCrashed},
	{"engine_hung", ErrEngineHung},
	{"device_unhealthy", ErrDeviceUnhealthy},
	{"upstream_unavailable", ErrUpstreamUnavailable},
	{"model_not_found", ErrModelNotFound},
	{"queue_full", ErrQueueFull},
	{"queue_timeout", ErrQueueTimeout},
	{"token_timeout", ErrTokenTimeout},
	{"slow_consumer", ErrSlowConsumer},
	{"key_revoked", ErrKeyRevoked}, // wraps nothing, but is wrapped with client_gone
	{"client_gone", ErrClientGone},
	{"shutting_down", ErrShuttingDown},
	{"context_length", ErrContextLength},
	{"not_supported", ErrNotSupported},
	{"too_many_streams", ErrTooManyStreams},
	{"invalid_request", ErrInvalidRequest},
}

// ErrorCode names the sentinel err wraps, "" for none.
func ErrorCode(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return ""
}

// Sentinel is the sentinel ErrorCode named code, nil for none.
func Sentinel(code string) error {
	for _, s := range sentinels {
		if s.code == code {
			return s.err
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
