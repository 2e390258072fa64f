package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/ollamaapi"
	"github.com/npud/npud/openaiapi"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
)

// requestInfo gives every request an id (the client's X-Request-ID when it
// is sane), echoes it, and writes one access-log line when the request ends.
func (s *Server) requestInfo(c *gin.Context) {
	// Counted until its log line is out: the drain waits for hijacked
	// (WebSocket) requests, which http.Server.Shutdown does not.
	s.requests.Add(1)
	defer s.requests.Done()
	info := &reqinfo.Info{ID: requestID(c.GetHeader("X-Request-ID")), Start: time.Now()}
	c.Header("X-Request-ID", info.ID)
	c.Request = c.Request.WithContext(reqinfo.With(c.Request.Context(), info))
	route := c.FullPath() // the route template: bounded, unlike the path
	if route == "" {
		route = "unmatched"
	}
	// A WebSocket's generations are counted one by one by its API, not
	// the connection as one (GET /v1/responses is a generation route's
	// path).
	generation := s.routeTable.Generation(route) && !s.webSocket(c.Request)
	if generation {
		done := s.metrics.streamOpened(route)
		defer done()
	}
	c.Next()

	status := c.Writer.Status()
	if info.Status != 0 {
		status = info.Status
	}
	if generation && !c.IsAborted() {
		s.metrics.requestEnded(route, status, info, s.servesModel)
	}
	attrs := []slog.Attr{
		slog.String("request_id", info.ID),
		slog.String("method", c.Request.Method),
		slog.String("route", logRoute(c)),
		slog.String("tenant", info.Tenant),
		slog.Int("status", status),
		slog.String("model", reqinfo.Clip(info.Model)),
		slog.Duration("ttft", info.TTFT),
		slog.Int("tokens_out", info.TokensOut),
		slog.String("finish_reason", info.FinishReason),
		slog.Duration("duration", time.Since(info.Start)),
	}
	level := slog.LevelInfo
	if info.Stream != nil {
		stats := info.Stream.Stats()
		if stats.MaxTokensClamped > 0 {
			// The client asked for more than the context left: it ran with this.
			attrs = append(attrs, slog.Int("max_tokens_clamped", stats.MaxTokensClamped))
		}
		if problems := stats.ToolCallProblems; len(problems) > 0 {
			// The calls went to the client anyway: it validates them.
			attrs = append(attrs, slog.String("tool_call_problems", reqinfo.Clip(strings.Join(problems, "; "))))
			level = slog.LevelWarn
		}
	}
	if info.Error != "" {
		attrs = append(attrs, slog.String("error", reqinfo.Clip(info.Error)))
		if status >= 500 || status < 300 { // a server fault, or a stream that failed after its 200
			level = slog.LevelWarn
		}
	}
	s.log.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

// requestID returns the client's id when it is 1–128 characters of
// [A-Za-z0-9._:-] (it ends up in JSON, logs and headers), else a new one.
func requestID(client string) string {
	if reqinfo.ValidID(client) {
		return client
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// refusalLinger bounds how long a refused request's body is read and
// thrown away after its answer (see lingerAfterRefusal): long enough for a
// client on the same box or network to finish sending an upload and read
// the answer, short enough that a client trickling its body holds nothing.
const refusalLinger = 2 * time.Second

// limitBody caps request bodies (readers see *http.MaxBytesError past it)
// and the time to send one: a client that trickles its body (slowloris)
// gets a read timeout instead of holding a handler forever. A request
// answered with an error before its body was read has the rest of its
// body read, a bounded amount, so that its client reads the answer.
func (s *Server) limitBody(c *gin.Context) {
	p := s.policy.Load()
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		c.Next()
		return
	}
	raw := &trackedBody{ReadCloser: c.Request.Body}
	c.Request.Body = http.MaxBytesReader(c.Writer, raw, p.maxBody)
	rc := http.NewResponseController(c.Writer)
	var deadline time.Time
	if p.bodyReadTimeout > 0 {
		deadline = time.Now().Add(p.bodyReadTimeout)
		if rc.SetReadDeadline(deadline) == nil {
			// Once the body is read the deadline must go: the server's
			// background read that notices a client leaving would
			// otherwise hit it in the middle of a long stream. A body that
			// did not arrive in time keeps it, so the server's own
			// after-handler read fails too and the connection closes.
			c.Request.Body = &deadlineBody{ReadCloser: c.Request.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		} else {
			deadline = time.Time{}
		}
	}
	refusal := &refusalWriter{ResponseWriter: c.Writer, body: raw, expectsContinue: expectsContinue(c.Request)}
	c.Writer = refusal
	c.Next()
	if refusal.refused {
		lingerAfterRefusal(c.Writer, rc, raw, p.maxBody, deadline)
	}
}

// lingerAfterRefusal sends a refusal's answer, then reads and discards
// what is left of the request's body, at most limit bytes and for at most
// refusalLinger (and never past the body's own deadline), before the
// connection closes (the answer said Connection: close). A server that
// closes a connection with unread data resets it, and a client still
// writing its body (Python's http.client, Go's transport: most clients
// send the whole body before they read) then gets "broken pipe" instead
// of the answer; net/http's own drain does not help here: it reads at
// most 256 KB and only when the connection is to be reused. A body left
// unread past either bound is cut off: the slow-body defence holds.
func lingerAfterRefusal(w gin.ResponseWriter, rc *http.ResponseController, body *trackedBody, limit int64, deadline time.Time) {
	// The answer goes out first, so a client that reads while it writes
	// (Go's transport) has it at once; reading after it needs full duplex.
	if rc.EnableFullDuplex() != nil {
		return
	}
	w.Flush()
	until := time.Now().Add(refusalLinger)
	if !deadline.IsZero() && deadline.Before(until) {
		until = deadline
	}
	if rc.SetReadDeadline(until) != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, body, limit); !errors.Is(err, io.EOF) {
		// Cut off: nothing more is read from this client.
		_ = rc.SetReadDeadline(time.Now())
	}
}

// refusalWriter notices an error answered while the request's body is
// still unread, and marks it Connection: close before its header goes
// out: what is left of the body is read only to be thrown away
// (lingerAfterRefusal), and the connection is not used again.
type refusalWriter struct {
	gin.ResponseWriter
	body            *trackedBody
	expectsContinue bool
	refused         bool
}

func (w *refusalWriter) WriteHeader(code int) {
	if code >= http.StatusBadRequest && !w.ResponseWriter.Written() && w.body.unread() {
		w.Header().Set("Connection", "close")
		// A client that waits for "100 Continue" before it sends its body
		// sends none: there is nothing to read, and net/http closes.
		w.refused = !(w.expectsContinue && w.body.n == 0)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// expectsContinue reports whether the client waits for the server's
// go-ahead before it sends its body.
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// trackedBody is the request's body as the connection delivers it: how
// much was read, and whether it ended (EOF) or failed (a read timeout).
type trackedBody struct {
	io.ReadCloser
	n     int64
	ended bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err != nil {
		b.ended = true
	}
	return n, err
}

// unread reports whether more of the body may still come.
func (b *trackedBody) unread() bool { return !b.ended }

// deadlineBody clears the read deadline when the body has been read.
type deadlineBody struct {
	io.ReadCloser
	clear func()
	done  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.clear()
	}
	return n, err
}

// recoverPanics turns a handler panic into a 500 in the protocol's shape
// (when nothing was written yet) instead of a dropped connection.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(p) // net/http's own signal to drop the connection
		}
		s.log.Error("handler panicked", "panic", p, "path", c.Request.URL.Path)
		reqinfo.From(c.Request.Context()).Error = fmt.Sprintf("panic: %v", p)
		if !c.Writer.Written() {
			writeRouteError(c, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p))
		}
		c.Abort()
	}()
	c.Next()
}

// writeRouteError answers errors that no API handler owns (unknown path,
// wrong method, panics).
func writeRouteError(c *gin.Context, status int, msg string) {
	typ, code := "invalid_request_error", "not_found"
	switch status {
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	case http.StatusInternalServerError:
		typ, code = "server_error", "internal_error"
	}
	writeProtocolError(c, &openaiapi.Error{Type: typ, Code: code, Base: errclass.Base{Status: status, Message: msg}})
}

// writeProtocolError answers for the daemon itself (unknown route, panic,
// a refused request) in the shape of the API the path belongs to, with
// each API's own writer: Ollama's {"error": "..."} under /api, Anthropic's
// under /v1/messages (a 503 is its 529 overloaded_error), OpenAI's
// everywhere else (the code is OpenAI's only).
func writeProtocolError(c *gin.Context, e *openaiapi.Error) {
	if p := c.Request.URL.Path; p == anthropicapi.MessagesPath || strings.HasPrefix(p, anthropicapi.MessagesPath+"/") {
		ae := anthropicapi.NewError(e.Status, e.Message)
		ae.RetryAfter = e.RetryAfter
		anthropicapi.WriteError(c.Writer, ae)
		return
	}
	if strings.HasPrefix(c.Request.URL.Path, "/api/") {
		ollamaapi.WriteError(c.Writer, &ollamaapi.Error{Base: e.Base})
		return
	}
	openaiapi.WriteError(c.Writer, e)
}

// logRoute is the matched route template, or the path when none matched.
func logRoute(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return c.Request.URL.Path
}
