// Package errclass classifies the errors of the router, its streams and
// the engines once, for every API: the HTTP status, a machine-readable
// code, whether it is the server's fault and whether the client may retry
// unchanged. Each API renders a class in its own error shape; none keeps
// a table of its own, so they cannot disagree.
package errclass

import (
	"net/http"

	"github.com/npud/npud/npu"
)

// StatusClientClosed is the de facto status (nginx's) for a client that
// went away before its response began; it only appears in logs and
// metrics, never on the wire.
const StatusClientClosed = 499

// Class is how an error is reported: npu's class of it (npu.Classify,
// the one table every layer uses) and the HTTP status for it.
type Class struct {
	Status    int    // the HTTP status
	Code      string // OpenAI's error.code, and the metrics' and logs' name for it
	Server    bool   // the server's fault (OpenAI's type "server_error"), not the request's
	Retryable bool   // the client may send the same request again, after Retry-After
}

// statusOf is the HTTP status of each of npu's error codes: the one thing
// about an error the edge decides.
var statusOf = map[string]int{
	"engine_panic":              http.StatusInternalServerError,
	"key_revoked":               http.StatusUnauthorized,
	"invalid_value":             http.StatusBadRequest,
	"model_not_found":           http.StatusNotFound,
	"context_length_exceeded":   http.StatusBadRequest,
	"not_supported":             http.StatusNotImplemented,
	"prompt_not_counted":        http.StatusNotImplemented,
	"too_many_streams":          http.StatusTooManyRequests,
	"rate_limit_exceeded":       http.StatusTooManyRequests,
	"queue_full":                http.StatusServiceUnavailable,
	"queue_timeout":             http.StatusServiceUnavailable,
	"shutting_down":             http.StatusServiceUnavailable,
	"slow_consumer":             http.StatusServiceUnavailable,
	"resume_expired":            http.StatusGone,
	"stream_abandoned":          http.StatusGone,
	"cancelled":                 http.StatusConflict,
	"token_timeout":             http.StatusGatewayTimeout,
	"client_closed":             StatusClientClosed,
	"engine_crashed_on_request": http.StatusUnprocessableEntity, // a 4xx: SDKs retry 5xx on their own
	"crash_throttled":           http.StatusTooManyRequests,
	"engine_crashed":            http.StatusServiceUnavailable,
	"device_unhealthy":          http.StatusServiceUnavailable,
	"upstream_unavailable":      http.StatusServiceUnavailable,
	"engine_hung":               http.StatusServiceUnavailable,
	"model_lost":                http.StatusServiceUnavailable,
	"structured_output_failed":  http.StatusInternalServerError, // OpenAI's model_error for invalid content is a 500
	npu.CodeEngineError:         http.StatusInternalServerError,
	npu.CodeInternalError:       http.StatusInternalServerError,
}

// Of classifies err. A code without a status (a class added to npu's
// table and not here, which TestEveryClassHasAStatus catches) is a 500.
func Of(err error) Class {
	c := npu.Classify(err)
	status, ok := statusOf[c.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return Class{Status: status, Code: c.Code, Server: c.Server, Retryable: c.Retryable}
}
