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
	"net/http"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/errclass"
)

// Error is an OpenAI-shaped API error: an HTTP status and the body
// {"error":{"message","type","param","code"}}.
type Error struct {
	errclass.Base
	Type  string
	Param string // empty → null
	Code  string // empty → null
}

// Invalid is a 400 invalid_request_error naming param (empty: none) and
// code.
func Invalid(param, code, format string, args ...any) *Error {
	return &Error{Type: "invalid_request_error", Param: param, Code: code, Base: errclass.Base{Status: http.StatusBadRequest,
		Message: fmt.Sprintf(format, args...)}}
}

// BodyError renders a request body that could not be decoded.
func BodyError(e *jsonbody.Error) *Error {
	return &Error{Type: "invalid_request_error", Param: e.Field, Code: e.Code, Base: errclass.Base{Status: e.Status, Message: e.Message}}
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
	e.WriteHeader(w, "application/json")
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
	e := &Error{Type: "invalid_request_error", Code: c.Code, Base: errclass.Base{Status: c.Status, Message: err.Error()}}
	if c.Server {
		e.Type = "server_error"
	}
	e.RetryAfter = c.RetryDelay(retryAfter)
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
		return &Error{Type: "invalid_request_error", Code: "invalid_value", Base: errclass.Base{Status: http.StatusBadRequest,
			Message: err.Error(), Cause: err}}
	}
	e := Invalid(ie.Param, "invalid_value", "%s", ie.Message)
	e.Cause = err
	return e
}
