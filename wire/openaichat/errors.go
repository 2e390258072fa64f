// Package openaichat reads OpenAI's chat completion requests into npu
// requests and writes npu's results in OpenAI's shapes (usage, finish
// reasons, tool-call deltas, the error object): what the OpenAI API and
// npud's WebSocket, whose start messages are chat requests, both need. It
// sits in wire, not in either API, because no API imports another; the
// types themselves are openaiwire's, which the upstream engine shares.
package openaichat

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/errclass"
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

// Invalid is a 400 invalid_request_error naming param (empty: none) and
// code.
func Invalid(param, code, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code,
		Message: fmt.Sprintf(format, args...)}
}

// BodyError renders a request body that could not be decoded.
func BodyError(e *jsonbody.Error) *Error {
	return &Error{Status: e.Status, Type: "invalid_request_error", Param: e.Field, Code: e.Code, Message: e.Message}
}

// ErrorBody is the wire shape; param and code are null when unknown, as
// OpenAI sends them.
type ErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Body is e in its wire shape.
func (e *Error) Body() ErrorBody {
	var b ErrorBody
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
func (e *Error) MarshalJSON() ([]byte, error) { return json.Marshal(e.Body()) }

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

// ErrorOf is err (from validation, the router or a stream) as OpenAI's
// error object, classified by npu's one table (the admin routes answer in
// OpenAI's shape too).
func ErrorOf(err error, retryAfter func() time.Duration) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	e := classify(err, retryAfter)
	e.Cause = err
	return e
}

func classify(err error, retryAfter func() time.Duration) *Error {
	var invalidErr *npu.InvalidRequestError
	if errors.As(err, &invalidErr) {
		return invalidRequest(invalidErr)
	}
	c := errclass.Of(err)
	e := &Error{Status: c.Status, Type: "invalid_request_error", Code: c.Code, Message: err.Error()}
	if c.Server {
		e.Type = "server_error"
	}
	if c.Retryable {
		e.RetryAfter = retryAfter()
		if c.Status == http.StatusTooManyRequests {
			e.RetryAfter = max(time.Second, e.RetryAfter)
		}
	}
	switch c.Code {
	case "model_not_found":
		e.Param, e.Message = "model", fmt.Sprintf("%v: it does not exist or is not served here", err)
	case "context_length_exceeded":
		e.Param = "messages"
	case "stream_abandoned":
		e.Message += "; send the request with a new Idempotency-Key to generate again"
	}
	return e
}

// invalidRequest renders a parameter the engine refuses (npu.Request.Validate
// or the engine itself) as a 400 naming it.
func invalidRequest(err error) *Error {
	var ie *npu.InvalidRequestError
	if !errors.As(err, &ie) {
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_value", Message: err.Error(), Cause: err}
	}
	e := Invalid(ie.Param, "invalid_value", "%s", ie.Message)
	e.Cause = err
	return e
}
