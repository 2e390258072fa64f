package ollamaapi

import (
	"encoding/json"
	"errors"
	"fmt"
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

// toError classifies errors from the runner and streams.
func toError(err error, retryAfter func() time.Duration) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	c := errclass.Of(err)
	msg := err.Error()
	if c.Code == "model_not_found" {
		msg = fmt.Sprintf("%v, try pulling it first", err)
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
