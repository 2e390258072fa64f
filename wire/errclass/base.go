package errclass

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Base is what each API's Error holds whatever its wire shape (OpenAI's,
// Anthropic's, Ollama's): the HTTP status, the message, when a client may
// retry, and the error it was made from. Each API's Error embeds it and
// adds only its own fields and body.
type Base struct {
	Status     int
	Message    string
	RetryAfter time.Duration // > 0: the answer carries Retry-After
	Cause      error         // what the error was made from, for errors.Is and the access log's code
}

func (e *Base) Error() string { return e.Message }

// Unwrap gives errors.Is access to the cause.
func (e *Base) Unwrap() error { return e.Cause }

// WriteHeader starts the answer: contentType, Retry-After (whole seconds,
// rounded up) when set, and the status. The API writes its body next.
func (e *Base) WriteHeader(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	w.WriteHeader(e.Status)
}

// RetryDelay is how long a client told to retry an error of class c
// should wait: none for a class that is not retryable, else estimate's
// (the router's) and at least a second after a 429.
func (c Class) RetryDelay(estimate func() time.Duration) time.Duration {
	if !c.Retryable || estimate == nil {
		return 0
	}
	d := estimate()
	if c.Status == http.StatusTooManyRequests {
		d = max(time.Second, d)
	}
	return d
}
