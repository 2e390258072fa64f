package wsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/wsconn"
)

// GET /npud/v1/streams: one WebSocket carries many generations, each named by
// the client's request_id, which the client can cancel, pause and resume.
// Every generation goes through the journal, so a start with a running or
// recent request_id joins it and resume_from picks it up after a lost
// connection. docs/REALTIME.md has the message schemas.

// clientMessage is anything a client sends; type says which fields count.
type clientMessage struct {
	Type       string          `json:"type"`
	RequestID  string          `json:"request_id"`
	ResumeFrom *int            `json:"resume_from"`
	ID         json.RawMessage `json:"id"` // echoed in pong
}

type wsStarted struct {
	Type          string `json:"type"` // "started"
	RequestID     string `json:"request_id"`
	Joined        bool   `json:"joined"`         // an existing generation was joined
	QueuePosition int    `json:"queue_position"` // requests ahead of it; 0 = running or next
}

// wsStatus says how the load of the model a request waits for goes.
type wsStatus struct {
	Type      string `json:"type"` // "status"
	RequestID string `json:"request_id"`
	Status    string `json:"status"`
}

type wsToken struct {
	Type      string `json:"type"` // "token"
	RequestID string `json:"request_id"`
	Index     int    `json:"index"`
	Delta     string `json:"delta"`
	Reasoning string `json:"reasoning,omitempty"` // the model's reasoning, never part of delta
	// ToolCalls are pieces of the model's tool calls, in OpenAI's
	// delta.tool_calls shape.
	ToolCalls []openaiwire.ToolCallDelta `json:"tool_calls,omitempty"`
}

type wsTimings struct {
	QueueMS   int64 `json:"queue_ms"`
	LoadMS    int64 `json:"load_ms"`
	PrefillMS int64 `json:"prefill_ms"`
	DecodeMS  int64 `json:"decode_ms"`
}

type wsFinal struct {
	Type         string           `json:"type"` // "final"
	RequestID    string           `json:"request_id"`
	Index        int              `json:"index"`
	FinishReason string           `json:"finish_reason"` // stop, length or cancelled
	Usage        openaiwire.Usage `json:"usage"`
	Timings      wsTimings        `json:"timings"`
}

type wsError struct {
	Type      string `json:"type"` // "error"
	RequestID string `json:"request_id,omitempty"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

type wsPong struct {
	Type string          `json:"type"` // "pong"
	ID   json.RawMessage `json:"id,omitempty"`
}

// realtimeConn is one WebSocket connection and its generations.
type realtimeConn struct {
	*wsconn.Conn
	a *API

	mu       sync.Mutex
	requests map[string]*realtimeRequest
}

type realtimeRequest struct {
	id      string
	journal *journal.Journal
	joined  bool                    // this connection joined a generation another start began
	cancel  context.CancelCauseFunc // set before the relay starts; guarded by realtimeConn.mu

	mu        sync.Mutex
	paused    bool
	resumed   chan struct{} // closed on resume
	cancelled bool
}

func (a *API) realtime(c *gin.Context) {
	a.cfg.Conns.Serve(c, nil, func(conn *wsconn.Conn) wsconn.Handler {
		return &realtimeConn{Conn: conn, a: a, requests: map[string]*realtimeRequest{}}
	})
}

// ReadLoop handles client messages until the connection ends.
func (rc *realtimeConn) ReadLoop(ctx context.Context) error {
	for {
		typ, data, err := rc.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			if err := rc.send(ctx, wsError{Type: "error", Code: "invalid_message", Message: "messages are JSON text frames"}); err != nil {
				return err // the connection is gone
			}
			continue
		}
		var msg clientMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			if err := rc.send(ctx, wsError{Type: "error", Code: "invalid_message", Message: "not a JSON object: " + err.Error()}); err != nil {
				return err // the connection is gone
			}
			continue
		}
		var err2 error
		switch msg.Type {
		case "start":
			err2 = rc.start(ctx, msg, data)
		case "cancel", "pause", "resume":
			err2 = rc.control(ctx, msg)
		case "ping":
			err2 = rc.send(ctx, wsPong{Type: "pong", ID: msg.ID})
		default:
			err2 = rc.send(ctx, wsError{Type: "error", RequestID: msg.RequestID, Code: "invalid_message",
				Message: fmt.Sprintf("unknown message type %q: use start, cancel, pause, resume or ping", msg.Type)})
		}
		if err2 != nil {
			return err2 // the connection is gone
		}
	}
}

// send writes one message; a client that does not read within the write
// timeout loses its connection (the pending generations then stop).
func (rc *realtimeConn) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return rc.Send(ctx, b)
}

// fail sends a request's error message.
func (rc *realtimeConn) fail(ctx context.Context, id string, e wsError) error {
	e.Type, e.RequestID = "error", id
	return rc.send(ctx, e)
}

// errorOf renders err as an error message: the classification every API
// shares, and what OpenAI's chat request reader says of a start.
func errorOf(err error) wsError {
	var apiErr *openaichat.Error
	if errors.As(err, &apiErr) {
		return wsError{Code: apiErr.Code, Message: apiErr.Message,
			Retryable: apiErr.Status == http.StatusServiceUnavailable || apiErr.Status == http.StatusTooManyRequests}
	}
	c := errclass.Of(err)
	return wsError{Code: c.Code, Message: err.Error(), Retryable: c.Retryable}
}

func (rc *realtimeConn) start(ctx context.Context, msg clientMessage, raw []byte) error {
	id := msg.RequestID
	if !reqinfo.ValidID(id) {
		return rc.send(ctx, wsError{Type: "error", Code: "invalid_request_id",
			Message: "start needs a request_id of 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'"})
	}
	start, apiErr := openaichat.ParseStart(ctx, raw, rc.a.cfg.DefaultTimeout, rc.a.cfg.Images, rc.a.router) // a WebSocket always streams
	if apiErr != nil {
		return rc.fail(ctx, id, errorOf(apiErr))
	}
	engineReq := start.Request
	started := false
	defer func() {
		if !started && engineReq.Release != nil {
			engineReq.Release() // the router never took it: its images' memory goes back
		}
	}()
	if rc.Draining() {
		return rc.fail(ctx, id, wsError{Code: "shutting_down", Message: "npud is shutting down", Retryable: true})
	}
	// Every generation counts against its tenant: the request rate here
	// (the upgrade was one request), the stream cap in the router.
	engineReq.Tenant = reqinfo.From(ctx).Tenant
	if refusal := rc.a.cfg.Conns.Admit(engineReq.Tenant); refusal != nil {
		return rc.fail(ctx, id, wsError{Code: refusal.Code, Message: refusal.Message, Retryable: true})
	}
	rc.mu.Lock()
	if _, busy := rc.requests[id]; busy {
		rc.mu.Unlock()
		return rc.fail(ctx, id, wsError{Code: "duplicate_request_id", Message: fmt.Sprintf("request %q is already running on this connection", id)})
	}
	if len(rc.requests) >= rc.a.cfg.MaxRequests {
		rc.mu.Unlock()
		return rc.send(ctx, wsError{Type: "error", RequestID: id, Code: "rate_limited", Retryable: true,
			Message: fmt.Sprintf("this connection already runs %d requests, its maximum", rc.a.cfg.MaxRequests)})
	}
	r := &realtimeRequest{id: id, resumed: make(chan struct{})}
	rc.requests[id] = r
	rc.mu.Unlock()

	key := journal.Key{Tenant: engineReq.Tenant, ID: id}
	// The journal's pump reads the stream under the stream's own context,
	// not this connection's: a generation outlives its client by design
	// (a resume or a repeated start joins it).
	j, joined, err := rc.a.journals.Open(key, id, start.Fingerprint, start.Resumable, func() (npu.Stream, error) { //nolint:contextcheck // see above
		s, err := rc.a.router.Start(engineReq)
		started = err == nil
		return s, err
	})
	if err != nil {
		rc.forget(id)
		e := errorOf(err)
		if errors.Is(err, journal.ErrConflict) {
			e = wsError{Code: "request_id_conflict", Message: err.Error()}
		}
		return rc.fail(ctx, id, e)
	}
	r.journal, r.joined = j, joined
	from := 0
	if msg.ResumeFrom != nil && *msg.ResumeFrom > 0 {
		from = min(*msg.ResumeFrom, maxEventID) // past the end is "after the end", never an overflow
	}
	cur := j.Attach(from)
	rctx, cancel := context.WithCancelCause(ctx)
	rc.mu.Lock()
	r.cancel = cancel
	rc.mu.Unlock()
	// Counted before "started" goes out, so that a client that saw it sees
	// the stream in the metrics too.
	streamEnded := rc.a.cfg.Conns.StreamOpened(StreamsPath)
	if err := rc.send(ctx, wsStarted{Type: "started", RequestID: id, Joined: joined, QueuePosition: rc.a.router.Waiting()}); err != nil {
		// The connection is gone: this reader leaves at once.
		streamEnded()
		cancel(nil)
		cur.Close()
		rc.forget(id)
		return err
	}
	info := &reqinfo.Info{ID: id, Start: time.Now(), Model: start.Model, Tenant: reqinfo.From(ctx).Tenant, Stream: j}
	rc.Go(func() {
		defer streamEnded()
		defer rc.forget(id)
		defer cur.Close()
		defer cancel(nil)
		rc.relay(ctx, rctx, r, cur, info)
		rc.a.cfg.Conns.RequestEnded(StreamsPath, info)
	})
	return nil
}

// Abort ends every generation of the connection now (the drain timeout
// passed): each relay sends its shutting_down error and returns; the
// connection then closes with 1001.
func (rc *realtimeConn) Abort() {
	rc.StopTaking()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, r := range rc.requests {
		if r.cancel != nil {
			r.cancel(npu.ErrShuttingDown)
		}
	}
}

// Revoke ends the connection because its API key was revoked: no more
// starts, the generations stop, and the close handshake says why (1008).
func (rc *realtimeConn) Revoke() {
	rc.StopTaking()
	rc.mu.Lock()
	for _, r := range rc.requests {
		if r.cancel != nil {
			r.cancel(errKeyRevoked)
		}
	}
	rc.mu.Unlock()
	go func() { _ = rc.Close(websocket.StatusPolicyViolation, "the API key was revoked") }()
}

var (
	errKeyRevoked = errors.New("the API key was revoked")
	errReaderLeft = errors.New("this reader cancelled; the generation goes on for its starter")
)

// shutdownErr is ErrShuttingDown when the relay's context ended because
// the connection was aborted.
func shutdownErr(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, npu.ErrShuttingDown) {
		return cause
	}
	return nil
}

func (rc *realtimeConn) forget(id string) {
	rc.mu.Lock()
	delete(rc.requests, id)
	rc.mu.Unlock()
}

// relay writes one generation's events to the client through the relay
// every streaming protocol shares. It reads with rctx, which a cancel of
// this request ends, and writes with ctx, the connection's: cancelling a
// write would close the whole connection. While paused it reads nothing:
// the journal keeps the text, and past its limit the generation stops as
// a slow consumer, as an unread SSE stream would.
func (rc *realtimeConn) relay(ctx, rctx context.Context, r *realtimeRequest, cur *journal.Cursor, info *reqinfo.Info) {
	f := &wsFraming{rc: rc, r: r, rctx: rctx}
	info.Record(relay.Run(rctx, wsWriter{rc: rc, ctx: ctx}, &wsSource{r: r, cur: cur, index: &f.index}, f,
		func(error) {})) // a WebSocket is always committed
}

// wsWriter writes frames as messages on the connection, which has no
// status to commit.
type wsWriter struct {
	rc  *realtimeConn
	ctx context.Context
}

func (w wsWriter) Committed() bool { return true }
func (w wsWriter) Commit(string)   {}
func (w wsWriter) Write(frame []byte, _ bool) error {
	return w.rc.Send(w.ctx, frame)
}

// wsSource reads a request's journal cursor, waiting while it is paused.
type wsSource struct {
	r     *realtimeRequest
	cur   *journal.Cursor
	index *int // the index of the event read last, for the framing
}

func (s *wsSource) Next(ctx context.Context) (npu.Event, error) {
	if wait := s.r.pausedUntil(); wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			if err := shutdownErr(ctx); err != nil {
				return npu.Event{}, err
			}
			return npu.Event{}, fmt.Errorf("%w: connection ended while paused", npu.ErrClientGone)
		}
	}
	ev, index, err := s.cur.NextEvent(ctx)
	*s.index = index
	return ev, err
}

// wsFraming is npud's WebSocket messages for one request.
type wsFraming struct {
	rc    *realtimeConn
	r     *realtimeRequest
	rctx  context.Context
	index int
}

func (f *wsFraming) message(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil // messages of strings and numbers always encode
	}
	return b
}

func (f *wsFraming) ContentType() string { return "" }
func (f *wsFraming) Open() []byte        { return nil }

// Heartbeat: WebSocket pings keep the connection alive; while the model
// loads, a status message says how the load goes.
func (f *wsFraming) Heartbeat(loading *npu.LoadStatus) []byte {
	if loading == nil {
		return nil
	}
	return f.message(wsStatus{Type: "status", RequestID: f.r.id, Status: loading.Progress(time.Now())})
}

func (f *wsFraming) Text(ev *npu.Event) []byte {
	calls := openaichat.ToolCallDeltas(ev.ToolCalls)
	if ev.Text == "" && ev.Reasoning == "" && len(calls) == 0 {
		return nil // only the end of a call, which the final message implies
	}
	return f.message(wsToken{Type: "token", RequestID: f.r.id, Index: f.index, Delta: ev.Text, Reasoning: ev.Reasoning,
		ToolCalls: calls})
}

// Terminator is a resumed reader's end: it has every event already.
func (f *wsFraming) Terminator() []byte {
	return f.message(wsFinal{Type: "final", RequestID: f.r.id, Index: f.index, FinishReason: "stop"})
}

func (f *wsFraming) End(res npu.Result) ([]byte, string) {
	reason := openaichat.FinishReason(res.FinishReason)
	return f.message(wsFinal{Type: "final", RequestID: f.r.id, Index: f.index, FinishReason: reason, Usage: openaichat.UsageOf(res),
		Timings: wsTimings{QueueMS: res.Timings.Queue.Milliseconds(), LoadMS: res.Timings.Load.Milliseconds(),
			PrefillMS: res.Timings.Prefill.Milliseconds(), DecodeMS: res.Timings.Decode.Milliseconds()}}), reason
}

func (f *wsFraming) Fail(err error) ([]byte, string, error) {
	cancelled := f.message(wsFinal{Type: "final", RequestID: f.r.id, Index: f.index, FinishReason: "cancelled"})
	switch {
	case errors.Is(err, journal.ErrCancelled) && !f.r.wasCancelled():
		return cancelled, "cancelled", nil // the starter cancelled what this reader joined
	case f.r.wasCancelled():
		return cancelled, "cancelled", nil // this client's own cancel: no failure
	case shutdownErr(f.rctx) != nil:
		err = shutdownErr(f.rctx)
	case errors.Is(err, npu.ErrClientGone):
		return nil, "", err
	}
	e := errorOf(err)
	e.Type, e.RequestID = "error", f.r.id
	return f.message(e), "", err
}

func (r *realtimeRequest) pausedUntil() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.paused {
		return nil
	}
	return r.resumed
}

func (r *realtimeRequest) wasCancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// control applies cancel, pause or resume to a running request.
func (rc *realtimeConn) control(ctx context.Context, msg clientMessage) error {
	rc.mu.Lock()
	r, ok := rc.requests[msg.RequestID]
	rc.mu.Unlock()
	if !ok || r.journal == nil {
		return rc.send(ctx, wsError{Type: "error", RequestID: msg.RequestID, Code: "unknown_request",
			Message: fmt.Sprintf("%s: no request %q runs on this connection", msg.Type, msg.RequestID)})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch msg.Type {
	case "cancel":
		r.cancelled = true
		if r.joined {
			// A reader that joined leaves; the generation is its
			// starter's to stop.
			rc.mu.Lock()
			if r.cancel != nil {
				r.cancel(errReaderLeft)
			}
			rc.mu.Unlock()
		} else {
			r.journal.Cancel() // the engine stops at its next callback
		}
		if r.paused {
			r.paused = false
			close(r.resumed)
		}
	case "pause":
		if !r.paused {
			r.paused, r.resumed = true, make(chan struct{})
		}
	case "resume":
		if r.paused {
			r.paused = false
			close(r.resumed)
		}
	}
	return nil
}

// maxEventID bounds resume_from: no stream has that many events.
const maxEventID = 1 << 31
