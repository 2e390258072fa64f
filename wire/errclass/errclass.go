// Package errclass classifies the errors of the runner, its streams and
// the engines once, for every API: the HTTP status, a machine-readable
// code, whether it is the server's fault and whether the client may retry
// unchanged. Each API renders a class in its own error shape; none keeps
// a table of its own, so they cannot disagree.
package errclass

import (
	"errors"
	"net/http"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
)

// StatusClientClosed is the de facto status (nginx's) for a client that
// went away before its response began; it only appears in logs and
// metrics, never on the wire.
const StatusClientClosed = 499

// Class is how an error is reported.
type Class struct {
	Status    int    // the HTTP status
	Code      string // OpenAI's error.code, and the metrics' and logs' name for it
	Server    bool   // the server's fault (OpenAI's type "server_error"), not the request's
	Retryable bool   // the client may send the same request again, after Retry-After
}

// Of classifies err. Unknown errors are internal errors.
func Of(err error) Class {
	var engineErr *npu.EngineError
	switch {
	case errors.Is(err, npu.ErrKeyRevoked): // before ErrClientGone, which wraps it
		return Class{Status: http.StatusUnauthorized, Code: "key_revoked"}
	case errors.Is(err, npu.ErrInvalidRequest):
		return Class{Status: http.StatusBadRequest, Code: "invalid_value"}
	case errors.Is(err, npu.ErrModelNotFound):
		return Class{Status: http.StatusNotFound, Code: "model_not_found"}
	case errors.Is(err, npu.ErrContextLength):
		return Class{Status: http.StatusBadRequest, Code: "context_length_exceeded"}
	case errors.Is(err, npu.ErrNotSupported):
		return Class{Status: http.StatusNotImplemented, Code: "not_supported"}
	case errors.Is(err, npu.ErrTooManyStreams):
		return Class{Status: http.StatusTooManyRequests, Code: "too_many_streams", Retryable: true}
	case errors.Is(err, npu.ErrQueueFull):
		return Class{Status: http.StatusServiceUnavailable, Code: "queue_full", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrQueueTimeout):
		return Class{Status: http.StatusServiceUnavailable, Code: "queue_timeout", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrShuttingDown):
		return Class{Status: http.StatusServiceUnavailable, Code: "shutting_down", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrSlowConsumer):
		return Class{Status: http.StatusServiceUnavailable, Code: "slow_consumer", Server: true, Retryable: true}
	case errors.Is(err, journal.ErrExpired):
		return Class{Status: http.StatusGone, Code: "resume_expired"}
	case errors.Is(err, journal.ErrAbandoned):
		return Class{Status: http.StatusGone, Code: "stream_abandoned"}
	case errors.Is(err, journal.ErrCancelled):
		return Class{Status: http.StatusConflict, Code: "cancelled"}
	case errors.Is(err, npu.ErrTokenTimeout):
		return Class{Status: http.StatusGatewayTimeout, Code: "token_timeout", Server: true}
	case errors.Is(err, npu.ErrClientGone):
		return Class{Status: StatusClientClosed, Code: "client_closed"}
	case errors.Is(err, npu.ErrEngineCrashedOnRequest):
		// A 4xx: SDKs retry 5xx on their own, and this one would only
		// crash the engine again.
		return Class{Status: http.StatusUnprocessableEntity, Code: "engine_crashed_on_request", Server: true}
	case errors.Is(err, npu.ErrCrashThrottled):
		return Class{Status: http.StatusTooManyRequests, Code: "crash_throttled", Retryable: true}
	case errors.Is(err, npu.ErrEngineCrashed):
		return Class{Status: http.StatusServiceUnavailable, Code: "engine_crashed", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrDeviceUnhealthy):
		return Class{Status: http.StatusServiceUnavailable, Code: "device_unhealthy", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrUpstreamUnavailable):
		return Class{Status: http.StatusServiceUnavailable, Code: "upstream_unavailable", Server: true, Retryable: true}
	case errors.Is(err, npu.ErrEngineHung):
		return Class{Status: http.StatusServiceUnavailable, Code: "engine_hung", Server: true, Retryable: true}
	case errors.As(err, &engineErr):
		return Class{Status: http.StatusInternalServerError, Code: "engine_error", Server: true}
	}
	return Class{Status: http.StatusInternalServerError, Code: "internal_error", Server: true}
}
