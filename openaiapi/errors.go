package openaiapi

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
	"github.com/npud/npud/npu/journal"
)

// Error is an OpenAI-shaped API error: an HTTP status and the body
// {"error":{"message","type","param","code"}}.
type Error struct {
	Status     int
	Message    string
	Type       string
	Param      string // empty → null
	Code       string // empty → null
	RetryAfter time.Duration
	Cause      error // what the error was made from, for errors.Is
}

func (e *Error) Error() string { return e.Message }

// Unwrap gives errors.Is access to the cause.
func (e *Error) Unwrap() error { return e.Cause }

func invalid(param, code, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code,
		Message: fmt.Sprintf(format, args...)}
}

// bodyError renders a request body that could not be decoded.
func bodyError(e *jsonbody.Error) *Error {
	return &Error{Status: e.Status, Type: "invalid_request_error", Param: e.Field, Code: e.Code, Message: e.Message}
}

// errorBody is the wire shape; param and code are null when unknown, as
// OpenAI sends them.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (e *Error) body() errorBody {
	var b errorBody
	b.Error.Message, b.Error.Type = e.Message, e.Type
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	if e.Code != "" {
		b.Error.Code = &e.Code
	}
	return b
}

// MarshalJSON writes the wire shape.
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.body()) }

// WriteError answers with e before any byte of the response was written.
func WriteError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e) // the client may be gone; nothing to do then
}

// statusClientClosed is the de facto status (nginx's) for a client that
// went away before the response began; it only appears in logs.
const statusClientClosed = 499

// toError classifies any error from validation, the runner or a stream.
func toError(err error, retryAfter func() time.Duration) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	e := classify(err, retryAfter)
	e.Cause = err
	return e
}

func classify(err error, retryAfter func() time.Duration) *Error {
	overloaded := func(code string) *Error {
		return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: code,
			Message: err.Error(), RetryAfter: retryAfter()}
	}
	var engineErr *npu.EngineError
	var invalidErr *npu.InvalidRequestError
	switch {
	case errors.As(err, &invalidErr):
		return invalidRequest(invalidErr)
	case errors.Is(err, npu.ErrModelNotFound):
		return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model",
			Code: "model_not_found", Message: fmt.Sprintf("%v: it does not exist or is not served here", err)}
	case errors.Is(err, npu.ErrContextLength):
		return invalid("messages", "context_length_exceeded", "%v", err)
	case errors.Is(err, npu.ErrTooManyStreams):
		return &Error{Status: http.StatusTooManyRequests, Type: "invalid_request_error", Code: "too_many_streams",
			Message: err.Error(), RetryAfter: max(time.Second, retryAfter())}
	case errors.Is(err, npu.ErrQueueFull):
		return overloaded("queue_full")
	case errors.Is(err, npu.ErrQueueTimeout):
		return overloaded("queue_timeout")
	case errors.Is(err, npu.ErrShuttingDown):
		return overloaded("shutting_down")
	case errors.Is(err, npu.ErrSlowConsumer):
		return overloaded("slow_consumer")
	case errors.Is(err, journal.ErrAbandoned):
		return &Error{Status: http.StatusGone, Type: "invalid_request_error", Code: "stream_abandoned",
			Message: err.Error() + "; send the request with a new Idempotency-Key to generate again"}
	case errors.Is(err, journal.ErrCancelled):
		return &Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "cancelled", Message: err.Error()}
	case errors.Is(err, journal.ErrExpired):
		return &Error{Status: http.StatusGone, Type: "invalid_request_error", Code: "resume_expired", Message: err.Error()}
	case errors.Is(err, npu.ErrTokenTimeout):
		return &Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "token_timeout", Message: err.Error()}
	case errors.Is(err, npu.ErrClientGone):
		return &Error{Status: statusClientClosed, Type: "invalid_request_error", Code: "client_closed", Message: err.Error()}
	case errors.As(err, &engineErr):
		return &Error{Status: http.StatusInternalServerError, Type: "server_error", Code: "engine_error", Message: err.Error()}
	}
	return &Error{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error", Message: err.Error()}
}

// invalidRequest renders a parameter the engine refuses (npu.Request.Validate
// or the engine itself) as a 400 naming it.
func invalidRequest(err error) *Error {
	var ie *npu.InvalidRequestError
	if !errors.As(err, &ie) {
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_value", Message: err.Error(), Cause: err}
	}
	e := invalid(ie.Param, "invalid_value", "%s", ie.Message)
	e.Cause = err
	return e
}
