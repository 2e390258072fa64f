// Package reqinfo carries what a handler learns about one request (model,
// time to first token, tokens, finish reason) to the access log that the
// daemon writes when the request ends.
package reqinfo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/npud/npud/npu"
)

// ErrWrite marks a failure to write the response: the client went away or
// stopped reading past the write timeout.
var ErrWrite = errors.New("writing to client")

// Info describes one request. The handler's goroutine writes it; the access
// log reads it after the handler returned.
type Info struct {
	ID     string
	Start  time.Time
	Tenant string // the API key's name; "anonymous" without keys
	// ManagesModels: the caller may manage models for every tenant
	// (unload a preloaded one): an admin key, or any caller without keys.
	ManagesModels bool
	// KeyID names the API key the request came with (a digest, never the
	// key); empty without keys. A reload that revokes the key closes the
	// WebSockets it opened.
	KeyID        string
	Model        string
	TTFT         time.Duration // zero until the first non-empty text was written
	TokensOut    int
	FinishReason string
	// Status, when set, overrides the HTTP status in the log: 499 for a
	// client that left before its response began.
	Status int
	Error  string
	// Err is the error behind Error, for classifying it (errors.Is).
	Err error
	// Stream is the generation this request ran, if any.
	Stream interface{ Stats() npu.StreamStats }
}

// Fail records why the request failed.
func (i *Info) Fail(err error) {
	i.Err, i.Error = err, err.Error()
}

type key struct{}

// With returns ctx carrying info.
func With(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the Info on ctx; without one it returns a fresh Info so that
// handlers never need to check.
func From(ctx context.Context) *Info {
	if info, ok := ctx.Value(key{}).(*Info); ok {
		return info
	}
	return &Info{Start: time.Now()}
}

// StreamReport is what a relay learned of the stream it wrote
// (wire/relay.Run): it returns one instead of writing into the request's
// record as it goes.
type StreamReport struct {
	FirstText    time.Time // when the first text was written; zero without any
	Tokens       int       // what the client got: the completion's tokens at the end, else those written
	FinishReason string    // how it ended; "" for a failure
	Err          error     // why it failed (a write, the engine, the client's leaving); nil when it ended well
}

// Record takes a relay's report into the request's record. A zero report
// (a failure answered before the commit, which recorded itself) changes
// nothing.
func (i *Info) Record(r StreamReport) {
	i.MarkFirstTokenAt(r.FirstText)
	if r.Tokens > 0 {
		i.TokensOut = r.Tokens
	}
	if r.FinishReason != "" {
		i.FinishReason = r.FinishReason
	}
	if r.Err != nil {
		i.Fail(r.Err)
	}
}

// MarkFirstToken records the time to first token once: now.
func (i *Info) MarkFirstToken() { i.MarkFirstTokenAt(time.Now()) }

// MarkFirstTokenAt records the time to first token once: at (ignored when
// zero, as for an answer without text).
func (i *Info) MarkFirstTokenAt(at time.Time) {
	if i.TTFT == 0 && !at.IsZero() {
		i.TTFT = max(at.Sub(i.Start), time.Nanosecond)
	}
}

// TruncatedInputsHeader is the response header that counts the inputs an
// embedding cut to fit its model, on every request that allowed the cut
// (/v1/embeddings' truncate, /api/embed's): nothing is cut unsaid.
const TruncatedInputsHeader = "X-Npud-Truncated-Inputs"

// MaxTokensClampedHeader is the response header that says the request's
// completion limit was lowered to the room its prompt left in the context
// (npu.CompletionLimit): its value is the limit the generation ran with.
const MaxTokensClampedHeader = "X-Npud-Max-Tokens-Clamped"

// SetMaxTokensClamped sets MaxTokensClampedHeader on h when n (the limit a
// request's was lowered to) is positive.
func SetMaxTokensClamped(h http.Header, n int) {
	if n > 0 {
		h.Set(MaxTokensClampedHeader, strconv.Itoa(n))
	}
}

// maxLogString is the longest client string a log line carries.
const maxLogString = 256

// Clip bounds a client string (a model name, an error quoting one) for a
// log line: a 200 KB model name must not become 200 KB of log per request.
// It cuts on a rune boundary and says how much was cut. Control
// characters need no care here: slog's handlers quote and escape them.
func Clip(s string) string {
	if len(s) <= maxLogString {
		return s
	}
	cut := maxLogString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes more)", s[:cut], len(s)-cut)
}

// ValidID reports whether a client-chosen id (X-Request-ID,
// Idempotency-Key, a WebSocket request_id) is 1 to 128 characters of
// [A-Za-z0-9._:-]: it ends up in JSON, logs, headers and journals.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
