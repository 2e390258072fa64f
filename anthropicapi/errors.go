package anthropicapi

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

// Error is an Anthropic-shaped error: an HTTP status and the body
// {"type":"error","error":{"type","message"}}.
type Error struct {
	errclass.Base
	Type string
}

// StatusOverloaded is Anthropic's status for a server that cannot take the
// request now (npud's 503s: queue full, draining, engine restarting).
const StatusOverloaded = 529

// TypeOf is Anthropic's error type for an HTTP status.
func TypeOf(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusGone, http.StatusUnprocessableEntity,
		http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable, StatusOverloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// NewError is an error with the type its status calls for; a 503 becomes
// Anthropic's 529 overloaded_error.
func NewError(status int, message string) *Error {
	if status == http.StatusServiceUnavailable {
		status = StatusOverloaded
	}
	return &Error{Type: TypeOf(status), Base: errclass.Base{Status: status, Message: message}}
}

func invalid(format string, args ...any) *Error {
	return NewError(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// bodyError renders a request body that could not be decoded (413 for one
// over the limit, 400 otherwise).
func bodyError(e *jsonbody.Error) *Error {
	return NewError(e.Status, e.Message)
}

type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// MarshalJSON writes the wire shape.
func (e *Error) MarshalJSON() ([]byte, error) {
	var b errorBody
	b.Type = "error"
	b.Error.Type, b.Error.Message = e.Type, e.Message
	return json.Marshal(b)
}

// WriteError answers with e before any byte of the response was written.
func WriteError(w http.ResponseWriter, e *Error) {
	e.WriteHeader(w, "application/json")
	_ = json.NewEncoder(w).Encode(e) // the client may be gone; nothing to do then
}

// toError classifies any error from validation, the router or a stream,
// through the classification every API shares.
func toError(err error, retryAfter func() time.Duration, served func() []string) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var invalidErr *npu.InvalidRequestError
	if errors.As(err, &invalidErr) {
		param := invalidErr.Param
		if param == npu.FormatParam {
			param = "output_config.format" // the structured output's field here
		}
		e := invalid("%s: %s", param, invalidErr.Message)
		e.Cause = err
		return e
	}
	c := errclass.Of(err)
	if c.Status == errclass.StatusClientClosed {
		return &Error{Type: "api_error", Base: errclass.Base{Status: c.Status, Message: err.Error(), Cause: err}}
	}
	e := NewError(c.Status, err.Error())
	e.Cause = err
	e.RetryAfter = c.RetryDelay(retryAfter)
	if c.Code == "model_not_found" && served != nil {
		e.Message = errclass.ModelNotFound(err, served(), "")
	}
	return e
}
