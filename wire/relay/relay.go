// Package relay writes a generation's events to a client, the same way for
// every streaming protocol: the response is committed at the first event,
// so a failure before it stays a real HTTP error; a failure after it is
// written in-band, terminator included; the first text marks the time to
// first token; heartbeats keep idle connections open; a client that cannot
// be written to ends the relay. Each protocol supplies only its framing.
package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/wire/reqinfo"
)

// Source is a generation's events: the bridge's stream, or a journal
// cursor adapted to the same shape.
type Source interface {
	Next(ctx context.Context) (npu.Event, error)
}

// Writer is where frames go: an HTTP response (wire/streamwriter), or a
// connection that is always committed.
type Writer interface {
	Committed() bool
	Commit(contentType string)
	Write(frame []byte, flush bool) error
}

// Framing is one protocol's frames. A nil frame writes nothing.
type Framing interface {
	// ContentType is the response's, committed with the first event.
	ContentType() string
	// Open is written (unflushed) right after the commit, before the first
	// event: OpenAI's role chunk.
	Open() []byte
	// Text frames one event's text, the model's reasoning that came with
	// it (never mixed into the text) and pieces of its tool calls; any of
	// them may be empty.
	Text(ev *npu.Event) []byte
	// Heartbeat keeps an idle stream open; loading, when set, says how
	// the load of the model the request waits for goes (minutes, the
	// first time a model is compiled for an NPU).
	Heartbeat(loading *npu.LoadStatus) []byte
	// End frames the generation's end and its terminator, and names the
	// finish reason for the access log.
	End(res npu.Result) (frame []byte, finishReason string)
	// Terminator is the terminator alone, for a reader that already has
	// every event (a resume from after the last one).
	Terminator() []byte
	// Fail frames a failure after the commit, terminator included (nil:
	// nobody to tell, the client left), and says what the access log
	// records: the failure, or nil and a finish reason for an end that is
	// no failure (a client's own cancel).
	Fail(err error) (frame []byte, finishReason string, failure error)
}

// ErrAfterEnd is returned by a Source whose reader asked for events past
// the last one: it has everything, and only the terminator is left (the
// journal's, whose cursors are such sources).
var ErrAfterEnd = journal.ErrAfterEnd

// Run relays src through f to w until the end, a failure or the client
// leaving. early answers a failure that comes before the commit, as a
// real HTTP error in the protocol's shape. What the relay learned of the
// stream (first text, tokens delivered, finish reason, failure) comes
// back as its report, for the caller to record (reqinfo.Info.Record): the
// relay writes into no shared request record.
func Run(ctx context.Context, w Writer, src Source, f Framing, early func(error)) reqinfo.StreamReport {
	var report reqinfo.StreamReport
	write := func(frame []byte, flush bool) bool {
		if frame == nil {
			return true
		}
		if err := w.Write(frame, flush); err != nil {
			report.Err = fmt.Errorf("%w: %w", reqinfo.ErrWrite, err)
			return false
		}
		return true
	}
	for {
		ev, err := src.Next(ctx)
		if errors.Is(err, ErrAfterEnd) {
			if !w.Committed() {
				w.Commit(f.ContentType())
			}
			write(f.Terminator(), false)
			return report
		}
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, npu.ErrKeyRevoked) {
				err = cause // say why the stream ends, not that its client left
			}
			if !w.Committed() {
				early(err)
				return report
			}
			frame, reason, failure := f.Fail(err)
			if failure != nil {
				report.Err = failure
			} else {
				report.FinishReason = reason
			}
			if frame != nil {
				// The failure is the outcome, whether or not the client can
				// still be told (a slow reader often cannot).
				_ = w.Write(frame, false)
			}
			return report
		}
		if !w.Committed() {
			w.Commit(f.ContentType())
			if !write(f.Open(), false) {
				return report
			}
		}
		switch {
		case ev.Heartbeat:
			if !write(f.Heartbeat(ev.Loading), true) {
				return report
			}
		case ev.Done:
			frame, reason := f.End(ev.Result)
			report.Tokens, report.FinishReason = ev.Result.CompletionTokens, reason
			write(frame, false)
			return report
		default:
			if report.FirstText.IsZero() {
				report.FirstText = time.Now()
			}
			if !write(f.Text(&ev), true) {
				return report
			}
			// What the client has got so far: the access log's count when
			// it leaves before the end.
			report.Tokens += ev.Tokens
		}
	}
}
