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

// limitBody caps request bodies (readers see *http.MaxBytesError past it)
// and the time to send one: a client that trickles its body (slowloris)
// gets a read timeout instead of holding a handler forever.
func (s *Server) limitBody(c *gin.Context) {
	p := s.policy.Load()
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		c.Next()
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, p.maxBody)
	if p.bodyReadTimeout > 0 {
		rc := http.NewResponseController(c.Writer)
		if rc.SetReadDeadline(time.Now().Add(p.bodyReadTimeout)) == nil {
			// Once the body is read the deadline must go: the server's
			// background read that notices a client leaving would
			// otherwise hit it in the middle of a long stream. A body that
			// did not arrive in time keeps it, so the server's own
			// after-handler read fails too and the connection closes.
			c.Request.Body = &deadlineBody{ReadCloser: c.Request.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
	}
	c.Next()
}

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
	writeProtocolError(c, &openaiapi.Error{Status: status, Type: typ, Code: code, Message: msg})
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
		ollamaapi.WriteError(c.Writer, &ollamaapi.Error{Status: e.Status, Message: e.Message, RetryAfter: e.RetryAfter})
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
