package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/wsconn"
)

// responsesPath is POST /v1/responses, and the Responses API's WebSocket
// mode: GET /v1/responses upgraded. The connection is wire/wsconn's, with
// the same authentication, limits and drain as npud's own WebSocket at
// /npud/v1/streams.
const responsesPath = "/v1/responses"

// defaultMaxWSMessages is how many messages a client may send on one
// Responses WebSocket connection when the configuration does not say.
const defaultMaxWSMessages = 10000

// Codes of the WebSocket mode's own errors. The connection limit is the
// code OpenAI uses for a connection that has served long enough: Codex
// CLI connects again on it.
const (
	codeConnectionLimit = "websocket_connection_limit_reached"
	codeInFlight        = "response_already_in_flight"
)

// responsesConn is one Responses connection: one response at a time, in
// sequence (as OpenAI's WebSocket mode runs them), and the session that
// lets previous_response_id continue the last one.
type responsesConn struct {
	*wsconn.Conn
	hub         *wsconn.Hub
	maxMessages int
	session     *responsesSession
	tenant      string
	messages    int // read so far, against the bound

	mu      sync.Mutex
	current *responseTurn // the response running, nil when none
	// aborted is why the connection ended its work (Revoke, Abort): a
	// response that starts after it is ended at once.
	aborted error
}

// responsesWebSocket serves GET /v1/responses.
func (a *API) responsesWebSocket(c *gin.Context) {
	if !strings.EqualFold(c.GetHeader("Upgrade"), "websocket") {
		// GET /v1/responses serves nothing else: say so in OpenAI's shape.
		WriteError(c.Writer, &Error{Type: "invalid_request_error", Code: "websocket_upgrade_required", Base: errclass.Base{Status: http.StatusBadRequest,
			Message: "GET /v1/responses is the Responses API's WebSocket mode: open a WebSocket (Upgrade: websocket), or POST /v1/responses"}})
		return
	}
	tenant := reqinfo.From(c.Request.Context()).Tenant
	hub := a.cfg.WebSockets
	maxMessages := a.cfg.MaxWSMessages
	if maxMessages <= 0 {
		maxMessages = defaultMaxWSMessages
	}
	hub.Serve(c, &websocket.AcceptOptions{CompressionMode: websocket.CompressionContextTakeover}, func(conn *wsconn.Conn) wsconn.Handler {
		return &responsesConn{Conn: conn, hub: hub, maxMessages: maxMessages, tenant: tenant, session: a.newResponsesSession(tenant)}
	})
}

// wsEvent is what the connection reads of a client message before its
// type says how to read the rest.
type wsEvent struct {
	Type       string `json:"type"`
	ResponseID string `json:"response_id"`
}

// ReadLoop handles the client's messages until the connection ends.
func (rc *responsesConn) ReadLoop(ctx context.Context) error {
	maxMessages := rc.maxMessages
	for {
		typ, data, err := rc.Read(ctx)
		if err != nil {
			return err
		}
		rc.messages++
		if rc.messages > maxMessages {
			// Finish what runs, say why, and close: the client connects
			// again (OpenAI's clients do on this code).
			rc.StopTaking()
			rc.Wait()
			_ = rc.Send(ctx, wsErrorOf(fmt.Errorf("this connection has carried %d messages, its maximum: open a new one", maxMessages),
				http.StatusBadRequest, codeConnectionLimit))
			return rc.Close(websocket.StatusNormalClosure, "message limit reached")
		}
		if typ != websocket.MessageText {
			if err := rc.Send(ctx, wsInvalid("invalid_message", "messages are JSON text frames")); err != nil {
				return err
			}
			continue
		}
		var ev wsEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			if err := rc.Send(ctx, wsInvalid("invalid_json", "not a JSON object: %v", err)); err != nil {
				return err
			}
			continue
		}
		var reply []byte
		switch ev.Type {
		case "response.create":
			reply = rc.create(ctx, data)
		case "response.cancel":
			reply = rc.cancel(ev.ResponseID)
		case "response.processed":
			// Codex acknowledges each response it has handled; nothing to do.
		default:
			reply = wsInvalid("unknown_event_type",
				"unknown event type %q: send response.create (or npud's response.cancel)", reqinfo.Clip(ev.Type))
		}
		if reply != nil {
			if err := rc.Send(ctx, reply); err != nil {
				return err
			}
		}
	}
}

// create starts a response, or answers why not.
func (rc *responsesConn) create(ctx context.Context, raw []byte) []byte {
	if rc.Draining() {
		return wsErrorOf(npu.ErrShuttingDown, http.StatusServiceUnavailable, "shutting_down")
	}
	rc.mu.Lock()
	busy := rc.current != nil
	rc.mu.Unlock()
	if busy {
		return wsInvalid(codeInFlight, "a response is still running on this connection: wait for its terminal event (responses run one at a time, in order), or open another connection")
	}
	// Every response counts against its tenant: the request rate here
	// (the upgrade was one request), the stream cap in the router.
	if refusal := rc.hub.Admit(rc.tenant); refusal != nil {
		return wsErrorOf(errors.New(refusal.Message), http.StatusTooManyRequests, refusal.Code)
	}
	turn, refusal := rc.session.Start(ctx, raw)
	if refusal != nil {
		return refusal
	}
	stream := turn.Stream()
	if stream == nil {
		// A warmup: its events are all there is, and it is the
		// connection's latest response.
		for _, msg := range bytes.Split(bytes.TrimSuffix(turn.Warmup(), []byte("\n")), []byte("\n")) {
			if err := rc.Send(ctx, msg); err != nil {
				return nil // the connection is gone; readLoop sees it
			}
		}
		turn.Done()
		return nil
	}
	info := &reqinfo.Info{ID: turn.ID(), Start: time.Now(), Model: turn.Model, Tenant: rc.tenant, Stream: stream}
	// The response is over for the connection before its terminal event
	// goes out: a client that reads it may send the next response.create,
	// continuing this one, at once.
	var endOnce sync.Once
	ended := func() {
		endOnce.Do(func() {
			turn.Done()
			rc.mu.Lock()
			rc.current = nil
			rc.mu.Unlock()
		})
	}
	// The writer is registered with the response it writes, under the
	// lock Revoke's abort takes: a revocation that finds the response
	// running waits for its writer (its error message, or its error event
	// and response.failed) before the close.
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.current = turn
	if rc.aborted != nil {
		turn.Abort(rc.aborted) // revoked or aborted while this one was starting
	}
	rc.Go(func() {
		defer rc.hub.StreamOpened(responsesPath)()
		defer ended()
		w := &responsesWriter{conn: rc.Conn, ctx: ctx}
		info.Record(relay.Run(ctx, w, turn, &turnFraming{Framing: turn.Framing(), ended: ended}, func(err error) {
			info.Fail(err)
			ended()
			_ = w.Write(turn.EarlyError(err), false)
		}))
		stream.Close()
		rc.hub.RequestEnded(responsesPath, info)
	})
	return nil
}

// turnFraming ends the response for its connection as its terminal event
// is framed, before it is written.
type turnFraming struct {
	relay.Framing
	ended func()
}

func (f *turnFraming) End(res npu.Result) ([]byte, string) {
	frame, reason := f.Framing.End(res)
	f.ended()
	return frame, reason
}

func (f *turnFraming) Fail(err error) ([]byte, string, error) {
	frame, reason, failure := f.Framing.Fail(err)
	f.ended()
	return frame, reason, failure
}

// cancel stops the running response (npud's extension: OpenAI's clients
// cancel by closing the connection, which stops it too).
func (rc *responsesConn) cancel(id string) []byte {
	rc.mu.Lock()
	turn := rc.current
	rc.mu.Unlock()
	if turn == nil || (id != "" && id != turn.ID()) {
		return wsErrorMessage(&Error{Type: "invalid_request_error", Param: "response_id", Code: "response_not_found", Base: errclass.Base{Status: http.StatusNotFound,
			Message: fmt.Sprintf("response.cancel: no response %q runs on this connection", reqinfo.Clip(id))}})
	}
	turn.Cancel()
	return nil
}

// Abort ends the running response (the drain timeout passed).
func (rc *responsesConn) Abort() {
	rc.StopTaking()
	rc.abort(npu.ErrShuttingDown)
}

// abort ends the running response, and any that starts later, with cause.
func (rc *responsesConn) abort(cause error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.aborted == nil {
		rc.aborted = cause
	}
	if rc.current != nil {
		rc.current.Abort(cause)
	}
}

// Revoke ends the connection: its API key was revoked.
func (rc *responsesConn) Revoke() {
	rc.StopTaking()
	rc.abort(npu.ErrKeyRevoked)
	go func() {
		// The running response ends first with its error event and
		// response.failed (no stream ends without its terminal event).
		rc.Wait()
		_ = rc.Close(websocket.StatusPolicyViolation, "the API key was revoked")
	}()
}

// responsesWriter writes a response's events, one message each. It
// commits at the first event, so a failure before it (queue full, the
// context too long) is an error message with the status HTTP would have
// had, as OpenAI's WebSocket mode sends it.
type responsesWriter struct {
	conn      *wsconn.Conn
	ctx       context.Context
	committed bool
}

func (w *responsesWriter) Committed() bool { return w.committed }
func (w *responsesWriter) Commit(string)   { w.committed = true }

// Write sends each event of frame (a JSON object and a newline each) as
// its own text message.
func (w *responsesWriter) Write(frame []byte, _ bool) error {
	for len(frame) > 0 {
		msg, rest, _ := bytes.Cut(frame, []byte("\n"))
		frame = rest
		if len(msg) == 0 {
			continue
		}
		if err := w.conn.Send(w.ctx, msg); err != nil {
			return err
		}
	}
	return nil
}
