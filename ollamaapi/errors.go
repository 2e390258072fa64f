package ollamaapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/errclass"
)

// Error is an Ollama API error: a status and {"error": "..."}.
type Error struct {
	errclass.Base
}

// statusClientClosed is logged for a client that left before its answer.
const statusClientClosed = errclass.StatusClientClosed

// WriteError answers with e before any byte of the response was written.
func WriteError(w http.ResponseWriter, e *Error) {
	e.WriteHeader(w, "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]string{"error": e.Message}) // the client may be gone
}

func bodyError(e *jsonbody.Error) *Error {
	return &Error{Base: errclass.Base{Status: e.Status, Message: e.Message}}
}

// pullAdvice is the not-found advice where a pull would help.
const pullAdvice = "try pulling it first"

// toError classifies errors from the router and streams; how is the
// advice for a model not found ("" where pulling would not help: delete,
// unload).
func toError(err error, retryAfter func() time.Duration, served func() []string, how string) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	c := errclass.Of(err)
	msg := err.Error()
	var invalidErr *npu.InvalidRequestError
	if errors.As(err, &invalidErr) && invalidErr.Param == npu.FormatParam {
		msg = "format: " + invalidErr.Message // a schema the router refused, named as Ollama's field
	}
	if c.Code == "model_not_found" {
		var names []string
		if served != nil {
			names = served()
		}
		msg = errclass.ModelNotFound(err, names, how)
	}
	return &Error{Base: errclass.Base{Status: c.Status, Message: msg, RetryAfter: c.RetryDelay(retryAfter), Cause: err}}
}

// toError classifies err with what the router says: when to retry, and
// which models an unknown model's 404 lists.
func (a *API) toError(err error) *Error {
	return toError(err, a.router.RetryAfter, func() []string { return errclass.ServedNames(a.router) }, pullAdvice)
}

// toErrorNoPull is toError where pulling the model would not help (its
// deletion, its unloading).
func (a *API) toErrorNoPull(err error) *Error {
	return toError(err, a.router.RetryAfter, func() []string { return errclass.ServedNames(a.router) }, "")
}
