package ollamaapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/jsonbody"
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
const statusClientClosed = errclass.StatusClientClosed

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

// pullAdvice is the not-found advice where a pull would help.
const pullAdvice = "try pulling it first"

// toError classifies errors from the runner and streams; how is the
// advice for a model not found ("" where pulling would not help: delete,
// unload).
func toError(err error, retryAfter func() time.Duration, served func() []string, how string) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	c := errclass.Of(err)
	msg := err.Error()
	if c.Code == "model_not_found" {
		var names []string
		if served != nil {
			names = served()
		}
		msg = errclass.ModelNotFound(err, names, how)
	}
	var retry time.Duration
	if c.Retryable {
		retry = retryAfter()
		if c.Status == http.StatusTooManyRequests {
			retry = max(time.Second, retry)
		}
	}
	status := c.Status
	return &Error{Status: status, Message: msg, RetryAfter: retry, Cause: err}
}

// toError classifies err with what the runner says: when to retry, and
// which models an unknown model's 404 lists.
func (a *API) toError(err error) *Error {
	return toError(err, a.runner.RetryAfter, func() []string { return errclass.ServedNames(a.runner) }, pullAdvice)
}

// toErrorNoPull is toError where pulling the model would not help (its
// deletion, its unloading).
func (a *API) toErrorNoPull(err error) *Error {
	return toError(err, a.runner.RetryAfter, func() []string { return errclass.ServedNames(a.runner) }, "")
}
