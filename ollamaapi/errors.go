package ollamaapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/npud/npud/daemon/jsonbody"
	"github.com/npud/npud/npu"
)

// Error is an Ollama API error: a status and {"error": "..."}.
type Error struct {
	Status     int
	Message    string
	RetryAfter time.Duration
	Cause      error // what the error was made from, for errors.Is
}

func (e *Error) Error() string { return e.Message }

// Unwrap gives errors.Is access to the cause.
func (e *Error) Unwrap() error { return e.Cause }

// statusClientClosed is logged for a client that left before its answer.
const statusClientClosed = 499

// WriteError answers with e before any byte of the response was written.
func WriteError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": e.Message}) // the client may be gone
}

func bodyError(e *jsonbody.Error) *Error { return &Error{Status: e.Status, Message: e.Message} }

// toError classifies errors from the runner and streams.
func toError(err error, retryAfter func() time.Duration) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	status := http.StatusInternalServerError
	var retry time.Duration
	msg := err.Error()
	switch {
	case errors.Is(err, npu.ErrModelNotFound):
		status = http.StatusNotFound
		msg = fmt.Sprintf("%v, try pulling it first", err)
	case errors.Is(err, npu.ErrContextLength), errors.Is(err, npu.ErrInvalidRequest):
		status = http.StatusBadRequest
	case errors.Is(err, npu.ErrNotSupported):
		status = http.StatusNotImplemented
	case errors.Is(err, npu.ErrTooManyStreams):
		status, retry = http.StatusTooManyRequests, max(time.Second, retryAfter())
	case npu.Retryable(err):
		status, retry = http.StatusServiceUnavailable, retryAfter()
	case errors.Is(err, npu.ErrTokenTimeout):
		status = http.StatusGatewayTimeout
	case errors.Is(err, npu.ErrClientGone):
		status = statusClientClosed
	}
	return &Error{Status: status, Message: msg, RetryAfter: retry, Cause: err}
}
