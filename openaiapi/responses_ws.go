package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/relay"
)

// The Responses API's WebSocket mode (GET /v1/responses upgraded) carries
// the same requests and events as POST /v1/responses with stream: true:
// each response.create message is a request body, each event goes back as
// one JSON text message. The connection's life (authentication, limits,
// drain, revocation) is wire/wsconn's, shared with npud's own WebSocket;
// the connection's protocol is in responses_wsconn.go; what one response
// says is here.

// ErrResponseCancelled ends a response its client cancelled
// (response.cancel): its terminal event says so; it is no failure.
var ErrResponseCancelled = errors.New("the client cancelled the response")

// responsesSession is what one WebSocket connection keeps between its
// responses: the most recent one, which previous_response_id may continue
// even when it was not stored (store: false), as OpenAI's WebSocket mode
// keeps it in the connection.
type responsesSession struct {
	a      *API
	tenant string
	last   *storedResponse
}

// newResponsesSession starts the state of one connection of tenant.
func (a *API) newResponsesSession(tenant string) *responsesSession {
	return &responsesSession{a: a, tenant: tenant}
}

// wsCreate is what a response.create message adds to the request body.
type wsCreate struct {
	responsesRequest
	// Generate false is a warmup: the request is checked and remembered,
	// nothing is generated (Codex sends one before its first turn).
	Generate *bool `json:"generate"`
}

// responseTurn is one response.create being answered.
type responseTurn struct {
	s       *responsesSession
	st      *responseStart
	framing *responseFraming
	// Model is the model the request named, for the access log.
	Model string

	mu sync.Mutex
	// aborted is why the connection ended the response (a revoked key,
	// the drain timeout): no event the engine made before it goes out
	// after it, not even an end the engine had already reached.
	aborted error
}

// Stream is the generation's events; nil for a warmup, whose whole answer
// is Warmup.
func (t *responseTurn) Stream() npu.Stream { return t.st.stream }

// Next is the stream's next event, or the abort's cause once the
// connection aborted the response, so that it ends with its error event
// and response.failed, and is neither stored nor the connection's latest.
func (t *responseTurn) Next(ctx context.Context) (npu.Event, error) {
	if cause := t.abortCause(); cause != nil {
		return npu.Event{}, cause
	}
	ev, err := t.st.stream.Next(ctx)
	if cause := t.abortCause(); cause != nil && err == nil {
		return npu.Event{}, cause
	}
	return ev, err
}

func (t *responseTurn) abortCause() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.aborted
}

// Framing frames the stream's events as the protocol's messages, one JSON
// object and a newline per event.
func (t *responseTurn) Framing() relay.Framing { return t.framing }

// Warmup is the events of a warmup: response.created and
// response.completed, no output.
func (t *responseTurn) Warmup() []byte {
	out := t.framing.Open() // response.created, response.in_progress
	end, _ := t.framing.End(npu.Result{FinishReason: npu.FinishStop})
	return append(out, end...)
}

// Done is called when the response has ended: a completed or incomplete
// one becomes the connection's latest (it was stored, when it asked to
// be, as its terminal event was framed).
func (t *responseTurn) Done() {
	if !t.framing.ended || t.st.run.obj.Status == "failed" {
		return
	}
	stored := t.st.stored()
	t.s.last = &stored
}

// Start decodes a response.create message and starts the response it asks
// for. A refusal comes back as the protocol's error message (type error,
// the HTTP status it would have had, and the OpenAI error object), ready
// to send.
func (s *responsesSession) Start(ctx context.Context, raw []byte) (*responseTurn, []byte) {
	var msg wsCreate
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, wsErrorMessage(invalid("", "invalid_json", "response.create is not a valid request body: %v", err))
	}
	r := &msg.responsesRequest
	if r.Background {
		return nil, wsErrorMessage(invalid("background", "unsupported_parameter", "'background' is not supported over a WebSocket"))
	}
	var history []message
	if id := r.PreviousResponseID; id != "" {
		switch {
		case s.last != nil && s.last.obj.ID == id:
			history = s.last.conversation
		default:
			prev, ok := s.a.responses.get(s.tenant, id)
			if !ok {
				e := responseNotFound("previous_response_id", id)
				// OpenAI's WebSocket mode names it so; clients start the
				// chain again with the whole conversation.
				e.Status, e.Code = http.StatusBadRequest, "previous_response_not_found"
				return nil, wsErrorMessage(e)
			}
			history = prev.conversation
		}
	}
	r.Stream = true
	warmup := msg.Generate != nil && !*msg.Generate
	st, apiErr := s.a.startResponse(ctx, s.tenant, r, history, time.Now().Unix(), warmup)
	if apiErr != nil {
		return nil, wsErrorMessage(apiErr)
	}
	st.run.lines = true
	f := &responseFraming{a: s.a, run: st.run,
		cancelled: func(err error) bool { return errors.Is(err, ErrResponseCancelled) },
		keep:      func() { s.a.keep(s.tenant, st) }}
	st.run.builder = newResponseBuilder(st.run.obj.ID, f.emit)
	return &responseTurn{s: s, st: st, framing: f, Model: r.Model}, nil
}

// ID is the response's id.
func (t *responseTurn) ID() string { return t.st.run.obj.ID }

// EarlyError is the error message for a failure before the response's
// first event (queue full, the context too long): the status it would
// have had over HTTP.
func (t *responseTurn) EarlyError(err error) []byte {
	return wsErrorMessage(t.st.req.renamed(t.s.a.toError(err, chatEndpoint)))
}

// wsError is an error message of the WebSocket mode: the status an HTTP
// request would have got and OpenAI's error object.
type wsError struct {
	Type   string          `json:"type"` // "error"
	Status int             `json:"status"`
	Error  json.RawMessage `json:"error"`
}

// wsErrorMessage renders e as an error message of the Responses WebSocket mode.
func wsErrorMessage(e *Error) []byte {
	obj, _ := json.Marshal(e.Body().Error) // strings only
	b, _ := json.Marshal(wsError{Type: "error", Status: e.Status, Error: obj})
	return b
}

// wsErrorOf renders a failure npud classifies (shutting down, rate
// limited, …) as an error message.
func wsErrorOf(err error, status int, code string) []byte {
	return wsErrorMessage(&Error{Type: "invalid_request_error", Code: code, Base: errclass.Base{Status: status, Message: err.Error()}})
}

// wsInvalid is an error message for a message npud cannot read.
func wsInvalid(code, format string, args ...any) []byte {
	return wsErrorMessage(invalid("", code, format, args...))
}

// Cancel stops the response: the engine stops at its next callback and
// the stream ends with response.incomplete, status cancelled.
func (t *responseTurn) Cancel() {
	if t.st.stream != nil {
		t.st.stream.Abandon(ErrResponseCancelled)
	}
}

// Abort ends the response with err (npud is shutting down, the key was
// revoked): an error event and response.failed follow, even when the
// engine had already finished and only the delivery was left.
func (t *responseTurn) Abort(err error) {
	t.mu.Lock()
	if t.aborted == nil {
		t.aborted = err
	}
	t.mu.Unlock()
	if t.st.stream != nil {
		t.st.stream.Abandon(err)
	}
}
