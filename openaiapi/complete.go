package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/journal"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
)

// complete serves /v1/chat/completions and /v1/completions.
func (a *API) complete(c *gin.Context, ep endpoint) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	var req request
	if !a.decode(c, info, &req) {
		return
	}
	engineReq, apiErr := openaichat.EngineRequest(&req, ep, a.cfg.DefaultTimeout)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if apiErr := openaichat.DecodeImages(ctx, &req, a.cfg.Images, a.router, engineReq); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	engineReq.Tenant = info.Tenant
	if n, _ := openaichat.Choices(&req); n > 1 { // checked by EngineRequest
		a.completeChoices(c, info, &req, engineReq, ep, n)
		return
	}
	var src *source
	defer func() {
		if src == nil && engineReq.Release != nil {
			engineReq.Release() // the router never took the request (however this ended)
		}
	}()
	src, err := a.open(c, info, &req, engineReq)
	if err != nil {
		a.fail(c.Writer, info, a.toError(err, ep))
		return
	}
	defer src.close()

	owner := info.ID
	if src.owner != "" {
		owner = src.owner
	}
	id := "chatcmpl-" + owner
	if ep == completionsEndpoint {
		id = "cmpl-" + owner
	}
	enc := newChunkEncoder(ep, id, src.createdAt(info.Start).Unix(), req.Model)
	enc.functions = openaichat.UsesFunctions(&req)
	defer func() {
		if src.stop != nil && errors.Is(context.Cause(ctx), npu.ErrKeyRevoked) {
			src.stop() // a revoked key's generation ends with its request, resumable or not
		}
	}()
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		a.writeStream(ctx, c.Writer, info, src, ep, enc, includeUsage)
		return
	}
	a.writeWhole(ctx, c, info, src, ep, id, req.Model, enc.functions)
}

// decode reads the body into req and records the model it names; false
// when the body was refused (answered already).
func (a *API) decode(c *gin.Context, info *reqinfo.Info, req reqinfo.Named) bool {
	if err := reqinfo.Decode(c.Request, req); err != nil {
		a.fail(c.Writer, info, bodyError(err))
		return false
	}
	return true
}

// createdAt is the completion's created time: the generation's start when
// the source is a journal (joined and resumed readers repeat it), else the
// request's.
func (s *source) createdAt(requestStart time.Time) time.Time {
	if !s.started.IsZero() {
		return s.started
	}
	return requestStart
}

// source is what a writer reads: the bridge's stream itself, or a cursor
// on its journal when the client named its request.
type source struct {
	next         func(ctx context.Context) (npu.Event, error)
	firstTokenAt func() time.Time
	close        func()
	// With a journal: position is the index of the event next returned
	// last; ids says to write it as the SSE id; resumed says the client
	// already has the start of the stream.
	position func() int
	ids      bool
	resumed  bool
	// started is when the generation began: a joined or resumed reader
	// repeats the original created, not its own arrival.
	started time.Time
	// owner is the id of the request that started the generation: a
	// joined reader shows its completion id.
	owner string
	// stop cancels the generation (its starter's journal; nil for a
	// reader that joined).
	stop func()
}

// maxEventID bounds Last-Event-ID: no stream has that many events, and
// the next index must not overflow.
const maxEventID = 1 << 31

// open starts the generation, or joins the one this request id started.
// A request without a client id reads the bridge's stream directly; one
// with X-Request-ID goes through a journal, so a second start with that id
// attaches instead of generating again (409 if the body differs), and
// Last-Event-ID resumes after the event the client saw last.
func (a *API) open(c *gin.Context, info *reqinfo.Info, req *request, engineReq *npu.Request) (*source, error) {
	// Joining is opt-in, with Idempotency-Key: X-Request-ID is for
	// tracing (a proxy may stamp every request with one) and names the
	// completion.
	clientID := c.GetHeader("Idempotency-Key")
	if clientID == "" {
		stream, err := a.router.Start(engineReq)
		if err != nil {
			return nil, err
		}
		reqinfo.SetMaxTokensClamped(c.Writer.Header(), stream.MaxTokensClamped())
		info.Stream = stream
		return &source{next: stream.Next, firstTokenAt: stream.FirstTokenAt, close: stream.Close}, nil
	}
	if !reqinfo.ValidID(clientID) {
		return nil, invalid("", "invalid_idempotency_key", "Idempotency-Key: want 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'")
	}
	key := journal.Key{Tenant: info.Tenant, ID: clientID}
	resumable := req.Resumable || strings.EqualFold(c.GetHeader("X-Npud-Resumable"), "true")
	from := 0
	if last := c.GetHeader("Last-Event-ID"); last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 || n >= maxEventID {
			return nil, invalid("", "invalid_last_event_id", "Last-Event-ID %q: want the number of an event", reqinfo.Clip(last))
		}
		if _, ok := a.journals.Lookup(key); !ok {
			return nil, &Error{Type: "invalid_request_error", Code: "stream_not_found", Base: errclass.Base{Status: http.StatusNotFound,
				Message: fmt.Sprintf("no stream %q to resume: it finished more than %s ago, or never started", clientID, a.cfg.Journal.Window)}}
		}
		from = n + 1
	}
	j, joined, err := a.journals.Open(key, info.ID, openaichat.Fingerprint(req), resumable, func() (npu.Stream, error) {
		stream, err := a.router.Start(engineReq)
		if err == nil {
			reqinfo.SetMaxTokensClamped(c.Writer.Header(), stream.MaxTokensClamped())
		}
		return stream, err
	})
	if errors.Is(err, journal.ErrConflict) {
		return nil, &Error{Type: "invalid_request_error", Code: "idempotency_key_conflict", Base: errclass.Base{Status: http.StatusConflict,
			Message: fmt.Sprintf("Idempotency-Key %q belongs to a different request; use a new key for a new request", clientID), Cause: err}}
	}
	if err != nil {
		return nil, err
	}
	if joined {
		if engineReq.Release != nil {
			engineReq.Release() // the generation joined has its own
		}
		a.log.Debug("request joined its running or recent generation", "request_id", clientID, "from_event", from)
	}
	info.Stream = j
	cur := j.Attach(from)
	src := &source{firstTokenAt: j.FirstTokenAt, close: cur.Close, ids: resumable, resumed: from > 0, started: j.Started(), owner: j.Owner()}
	if !joined {
		src.stop = j.Cancel
	}
	last := from - 1
	src.position = func() int { return last }
	src.next = func(ctx context.Context) (npu.Event, error) {
		ev, index, err := cur.NextEvent(ctx)
		if err == nil && !ev.Heartbeat {
			last = index
		}
		return ev, err
	}
	return src, nil
}

// toError classifies err for endpoint ep: on /v1/completions a context
// that is too long is the prompt's fault, as there are no messages.
func (a *API) toError(err error, ep endpoint) *Error {
	e := toError(err, a.router.RetryAfter)
	if e.Code == "model_not_found" && errors.Is(err, npu.ErrModelNotFound) {
		named := *e
		named.Message = errclass.ModelNotFound(err, errclass.ServedNames(a.router), "")
		e = &named
	}
	if ep == completionsEndpoint && e.Param == "messages" {
		named := *e
		named.Param = "prompt"
		return &named
	}
	return e
}

// fail answers an error before the response began.
func (a *API) fail(rw http.ResponseWriter, info *reqinfo.Info, e *Error) {
	info.Fail(e)
	if e.Status == statusClientClosed {
		info.Status = statusClientClosed // nobody to answer
		return
	}
	WriteError(rw, e)
}

// writeStream relays a stream as server-sent events, through the relay
// every streaming protocol shares: the 200 is committed at the first event
// (text, heartbeat or the end), so errors that come first (queue full or
// timed out, context too long) stay real HTTP errors.
func (a *API) writeStream(ctx context.Context, rw http.ResponseWriter, info *reqinfo.Info, src *source, ep endpoint, enc *chunkEncoder, includeUsage bool) {
	w := newSSEWriter(rw, a.cfg.WriteTimeout)
	info.Record(relay.Run(ctx, w, sourceEvents(src.next), &sseFraming{a: a, ep: ep, src: src, enc: enc, includeUsage: includeUsage},
		func(err error) { a.fail(rw, info, a.toError(err, ep)) }))
}

// sourceEvents adapts a source's next function to relay.Source.
type sourceEvents func(ctx context.Context) (npu.Event, error)

func (f sourceEvents) Next(ctx context.Context) (npu.Event, error) { return f(ctx) }

// sseFraming is OpenAI's event stream: `data: <json>` chunks, the role
// chunk first, ids on resumable streams, [DONE] at the end, an error
// object then [DONE] on failure.
type sseFraming struct {
	a            *API
	ep           endpoint
	src          *source
	enc          *chunkEncoder // its frames share one buffer: each is written before the next is made
	includeUsage bool
	// choices, for n > 1: where one choice ends and the next begins.
	choices *choices
}

func (f *sseFraming) ContentType() string { return "text/event-stream" }

func (f *sseFraming) Open() []byte {
	if f.enc.chat && !f.src.resumed {
		return f.enc.role() // rides in the same flush as the first event
	}
	return nil
}

// withID prefixes a frame with its event number for resumable streams.
func (f *sseFraming) withID(frame []byte) []byte {
	if !f.src.ids {
		return frame
	}
	return append(append(append([]byte("id: "), strconv.Itoa(f.src.position())...), '\n'), frame...)
}

func (f *sseFraming) Text(ev *npu.Event) []byte {
	if f.choices != nil {
		if res := f.choices.boundary(); res != nil {
			// A choice ended and the next begins: its finish chunk,
			// then the next one's role chunk.
			frame := append([]byte(nil), f.enc.finish(finishReason(openaichat.FinishReason(res.FinishReason), f.enc.functions))...)
			f.enc.setChoice(f.choices.index)
			if f.enc.chat {
				frame = append(frame, f.enc.role()...)
			}
			return frame
		}
	}
	if len(ev.ToolCalls) == 0 || !f.enc.chat {
		// The hot path: the encoder's own buffer, no copy.
		return f.withID(f.enc.text(ev.Reasoning, ev.Text))
	}
	// The encoder reuses one buffer: the text chunk is copied before the
	// tool-call chunk is made.
	var frame []byte
	if ev.Text != "" || ev.Reasoning != "" {
		frame = append(frame, f.enc.text(ev.Reasoning, ev.Text)...)
	}
	frame = append(frame, f.enc.toolCalls(ev.ToolCalls)...)
	if len(frame) == 0 {
		return nil
	}
	return f.withID(frame)
}

// Heartbeat is an SSE comment, which every client skips: `: ping`, or
// while the model loads, how the load goes.
func (f *sseFraming) Heartbeat(loading *npu.LoadStatus) []byte {
	if loading == nil {
		return heartbeatFrame
	}
	return []byte(": " + loading.Progress(time.Now()) + "\n\n") // one line: Progress quotes the name
}
func (f *sseFraming) Terminator() []byte { return doneFrame }

func (f *sseFraming) End(res npu.Result) ([]byte, string) {
	reason := finishReason(openaichat.FinishReason(res.FinishReason), f.enc.functions)
	frame := append([]byte(nil), f.withID(f.enc.finish(reason))...)
	if f.includeUsage {
		frame = append(frame, f.enc.usage(openaichat.UsageOf(res))...)
	}
	// [DONE] goes with the handler's return, in the same packet as the
	// chunked-encoding terminator.
	return append(frame, doneFrame...), reason
}

// Fail is the in-band error after the 200, followed by [DONE], so no
// client mistakes it for success.
func (f *sseFraming) Fail(err error) ([]byte, string, error) {
	apiErr := f.a.toError(err, f.ep)
	if apiErr.Status == statusClientClosed {
		return nil, "", err // nobody to tell
	}
	return append(append([]byte(nil), errorFrame(apiErr)...), doneFrame...), "", err
}

// writeWhole collects the stream into one chat.completion or text_completion.
func (a *API) writeWhole(ctx context.Context, c *gin.Context, info *reqinfo.Info, src *source, ep endpoint, id, model string, functions bool) {
	answer, err := npu.CollectAnswer(ctx, src.next)
	info.MarkFirstTokenAt(src.firstTokenAt())
	if err != nil {
		a.fail(c.Writer, info, a.toError(err, ep))
		return
	}
	info.TokensOut = answer.Result.CompletionTokens
	info.FinishReason = finishReason(openaichat.FinishReason(answer.Result.FinishReason), functions)
	// An engine that cannot count the prompt beforehand says at its end.
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), answer.Result.MaxTokensClamped)
	c.Header("Content-Type", "application/json")
	c.Status(http.StatusOK)
	if err := json.NewEncoder(c.Writer).Encode(wholeResponse(ep, id, src.createdAt(info.Start).Unix(), model, answer, info.FinishReason, functions)); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}

type chatMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"` // null when the answer is only tool calls
	// ReasoningContent is the model's reasoning, apart from the answer.
	ReasoningContent string            `json:"reasoning_content,omitempty"`
	ToolCalls        []messageToolCall `json:"tool_calls,omitempty"`
	// FunctionCall is the answer's call in the legacy form, for a request
	// that declared functions.
	FunctionCall *openaiwire.FunctionCall `json:"function_call,omitempty"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Text         *string      `json:"text,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
}

type completion struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []choice         `json:"choices"`
	Usage   openaiwire.Usage `json:"usage"`
}

func wholeResponse(ep endpoint, id string, created int64, model string, a npu.Answer, reason string, functions bool) completion {
	ch := choice{FinishReason: reason}
	object := "text_completion"
	text := a.Text
	if ep == chatEndpoint {
		object = "chat.completion"
		msg := &chatMessage{Role: "assistant", Content: &text, ReasoningContent: a.Reasoning}
		for _, c := range a.ToolCalls {
			mc := messageToolCall{ID: c.ID, Type: "function"}
			mc.Function.Name, mc.Function.Arguments = c.Name, c.Arguments
			msg.ToolCalls = append(msg.ToolCalls, mc)
		}
		if functions && len(msg.ToolCalls) > 0 {
			// One call, as the legacy form has (the request asked for one).
			msg.FunctionCall, msg.ToolCalls = &msg.ToolCalls[0].Function, nil
		}
		if text == "" && (len(msg.ToolCalls) > 0 || msg.FunctionCall != nil) {
			msg.Content = nil
		}
		ch.Message = msg
	} else {
		ch.Text = &text
	}
	return completion{ID: id, Object: object, Created: created, Model: model, Choices: []choice{ch}, Usage: openaichat.UsageOf(a.Result)}
}
