package openaiapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
)

// The Responses API (POST /v1/responses) is chat completions in another
// shape: its request is translated into a chat request (one validation),
// started on the same router, and its stream goes through the same relay
// with one more framing (responseFraming), which turns the bridge's events
// into typed events and output items.

// responseObject is the response object, whole or inside stream events.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *incompleteReason `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []outputItem      `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          reasoningEcho     `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []responsesTool   `json:"tools"`
	Truncation         string            `json:"truncation"`
	Usage              *responseUsage    `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteReason struct {
	Reason string `json:"reason"`
}

type reasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// outputItem is a message, a function call or a reasoning item.
type outputItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
	// message
	Role    string        `json:"role,omitempty"`
	Content []contentPart `json:"content,omitempty"`
	// reasoning: summary is always present ([] when none)
	Summary *[]contentPart `json:"summary,omitempty"`
	// function_call
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// MarshalJSON writes each kind of item with its own fields, always
// present: clients iterate a message's content and a reasoning item's
// summary even while empty.
func (it outputItem) MarshalJSON() ([]byte, error) {
	content := it.Content
	if content == nil {
		content = []contentPart{}
	}
	m := map[string]any{"id": it.ID, "type": it.Type}
	switch it.Type {
	case "message":
		m["role"], m["status"], m["content"] = it.Role, it.Status, content
	case "reasoning":
		summary := []contentPart{}
		if it.Summary != nil {
			summary = *it.Summary
		}
		m["summary"], m["content"] = summary, content
		if it.Status != "" {
			m["status"] = it.Status
		}
	case "function_call":
		args := ""
		if it.Arguments != nil {
			args = *it.Arguments
		}
		m["call_id"], m["name"], m["arguments"], m["status"] = it.CallID, it.Name, args, it.Status
	}
	return json.Marshal(m)
}

type contentPart struct {
	Type        string    `json:"type"`
	Text        string    `json:"text"`
	Annotations *[]string `json:"annotations,omitempty"`
	Logprobs    *[]string `json:"logprobs,omitempty"`
}

func newOutputTextPart(text string) contentPart {
	empty := []string{}
	return contentPart{Type: "output_text", Text: text, Annotations: &empty, Logprobs: &empty}
}

// responseBuilder assembles the output items from the bridge's events and
// says, for a stream, what happened in the order it happened.
type responseBuilder struct {
	id     string
	output []outputItem
	// open is the index in output of the item still growing, -1 when none;
	// calls maps a bridge call index to its item.
	open  int
	calls map[int]int
	// reasoningTokens counts the engine callbacks that carried reasoning
	// only (a chunk mixing both counts as answer).
	reasoningTokens int
	emit            func(event string, payload map[string]any)
}

func newResponseBuilder(id string, emit func(string, map[string]any)) *responseBuilder {
	if emit == nil {
		emit = func(string, map[string]any) {}
	}
	return &responseBuilder{id: id, open: -1, calls: map[int]int{}, emit: emit}
}

func (b *responseBuilder) itemID(prefix string) string {
	return prefix + "_" + strings.TrimPrefix(b.id, "resp_") + "_" + strconv.Itoa(len(b.output))
}

// start opens a new item of kind typ (reasoning or message).
func (b *responseBuilder) start(typ string) {
	b.closeOpen()
	it := outputItem{Type: typ, Status: "in_progress"}
	part := "output_text"
	switch typ {
	case "reasoning":
		it.ID = b.itemID("rs")
		empty := []contentPart{}
		it.Summary = &empty
		part = "reasoning_text"
	default:
		it.ID, it.Role = b.itemID("msg"), "assistant"
	}
	b.output = append(b.output, it)
	b.open = len(b.output) - 1
	b.emit("response.output_item.added", map[string]any{"output_index": b.open, "item": it})
	p := contentPart{Type: part}
	if part == "output_text" {
		p = newOutputTextPart("")
	}
	b.output[b.open].Content = []contentPart{p}
	b.emit("response.content_part.added", map[string]any{"output_index": b.open, "item_id": it.ID, "content_index": 0, "part": p})
}

// closeOpen finishes the growing reasoning or message item.
func (b *responseBuilder) closeOpen() {
	if b.open < 0 {
		return
	}
	it := &b.output[b.open]
	it.Status = "completed"
	idx := b.open
	b.open = -1
	if it.Type == "reasoning" {
		it.Status = "" // reasoning items carry no status on the wire when done
		p := it.Content[0]
		b.emit("response.reasoning_text.done", map[string]any{"output_index": idx, "item_id": it.ID, "content_index": 0, "text": p.Text})
		b.emit("response.content_part.done", map[string]any{"output_index": idx, "item_id": it.ID, "content_index": 0, "part": p})
	} else {
		p := it.Content[0]
		b.emit("response.output_text.done", map[string]any{"output_index": idx, "item_id": it.ID, "content_index": 0, "text": p.Text, "logprobs": []string{}})
		b.emit("response.content_part.done", map[string]any{"output_index": idx, "item_id": it.ID, "content_index": 0, "part": p})
	}
	b.emit("response.output_item.done", map[string]any{"output_index": idx, "item": *it})
}

// add takes one event of the bridge.
func (b *responseBuilder) add(ev *npu.Event) {
	if ev.Reasoning != "" {
		if b.open < 0 || b.output[b.open].Type != "reasoning" {
			b.start("reasoning")
		}
		it := &b.output[b.open]
		it.Content[0].Text += ev.Reasoning
		b.emit("response.reasoning_text.delta", map[string]any{"output_index": b.open, "item_id": it.ID, "content_index": 0, "delta": ev.Reasoning})
		if ev.Text == "" && len(ev.ToolCalls) == 0 {
			b.reasoningTokens += ev.Tokens
		}
	}
	if ev.Text != "" {
		if b.open < 0 || b.output[b.open].Type != "message" {
			b.start("message")
		}
		it := &b.output[b.open]
		it.Content[0].Text += ev.Text
		b.emit("response.output_text.delta", map[string]any{"output_index": b.open, "item_id": it.ID, "content_index": 0, "delta": ev.Text, "logprobs": []string{}})
	}
	for _, d := range ev.ToolCalls {
		b.toolCall(d)
	}
}

func (b *responseBuilder) toolCall(d npu.ToolCallDelta) {
	idx, ok := b.calls[d.Index]
	if !ok {
		b.closeOpen()
		empty := ""
		it := outputItem{ID: b.itemID("fc"), Type: "function_call", Status: "in_progress", CallID: d.ID, Name: d.Name, Arguments: &empty}
		b.output = append(b.output, it)
		idx = len(b.output) - 1
		b.calls[d.Index] = idx
		b.emit("response.output_item.added", map[string]any{"output_index": idx, "item": it})
	}
	it := &b.output[idx]
	if d.Arguments != "" {
		args := *it.Arguments + d.Arguments
		it.Arguments = &args
		b.emit("response.function_call_arguments.delta", map[string]any{"output_index": idx, "item_id": it.ID, "delta": d.Arguments})
	}
	if d.Done && it.Status != "completed" {
		b.finishCall(idx)
	}
}

func (b *responseBuilder) finishCall(idx int) {
	it := &b.output[idx]
	it.Status = "completed"
	b.emit("response.function_call_arguments.done", map[string]any{"output_index": idx, "item_id": it.ID, "name": it.Name, "arguments": *it.Arguments})
	b.emit("response.output_item.done", map[string]any{"output_index": idx, "item": *it})
}

// finish closes every item still open.
func (b *responseBuilder) finish() {
	b.closeOpen()
	for _, idx := range b.calls {
		if b.output[idx].Status != "completed" {
			b.finishCall(idx)
		}
	}
}

// usage is the Responses API's usage for a result.
func (b *responseBuilder) usage(r npu.Result) *responseUsage {
	u := &responseUsage{InputTokens: r.PromptTokens, OutputTokens: r.CompletionTokens, TotalTokens: r.PromptTokens + r.CompletionTokens}
	u.InputTokensDetails.CachedTokens = r.CachedPromptTokens
	u.OutputTokensDetails.ReasoningTokens = min(b.reasoningTokens, r.CompletionTokens)
	return u
}

// responseRun is one response being made: the request, what it becomes.
type responseRun struct {
	req     *responsesRequest
	obj     responseObject
	builder *responseBuilder
	seq     int
	// lines: each event is its JSON and a newline (one WebSocket message
	// each), not an SSE event.
	lines bool
}

func newResponseRun(id string, created int64, r *responsesRequest) *responseRun {
	obj := responseObject{
		ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: r.Model,
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Output: []outputItem{},
		ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		Store:             r.Store == nil || *r.Store, Temperature: r.Temperature, TopP: r.TopP,
		Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: json.RawMessage(`"auto"`),
		Tools: r.Tools, Truncation: "disabled", Metadata: r.Metadata,
	}
	if obj.Tools == nil {
		obj.Tools = []responsesTool{}
	}
	if obj.Metadata == nil {
		obj.Metadata = map[string]string{}
	}
	if isSet(r.ToolChoice) {
		obj.ToolChoice = r.ToolChoice
	}
	if r.Text != nil && r.Text.Format != nil && r.Text.Format.Type != "" {
		obj.Text, _ = json.Marshal(r.Text) // checked: strings, a flag and the schema as sent
	}
	if r.PreviousResponseID != "" {
		obj.PreviousResponseID = &r.PreviousResponseID
	}
	if r.User != "" {
		obj.User = &r.User
	}
	if r.Reasoning != nil {
		obj.Reasoning = reasoningEcho{Effort: r.Reasoning.Effort, Summary: r.Reasoning.Summary}
	}
	return &responseRun{req: r, obj: obj}
}

// end sets the outcome from the generation's result.
func (run *responseRun) end(res npu.Result) {
	run.builder.finish()
	run.obj.Output = run.builder.output
	run.obj.Usage = run.builder.usage(res)
	run.obj.Status = "completed"
	if res.FinishReason == npu.FinishLength {
		run.obj.Status = "incomplete"
		run.obj.IncompleteDetails = &incompleteReason{Reason: "max_output_tokens"}
	}
}

// fail sets a failed outcome.
func (run *responseRun) fail(e *Error) {
	run.obj.Output = run.builder.output
	run.obj.Status = "failed"
	code := e.Code
	if code == "" {
		code = "server_error"
	}
	run.obj.Error = &responseError{Code: code, Message: e.Message}
}

// frame encodes one typed event: `event:` and `data:` lines, the data
// carrying type and sequence_number.
func (run *responseRun) frame(dst []byte, event string, payload map[string]any) []byte {
	payload["type"] = event
	payload["sequence_number"] = run.seq
	run.seq++
	b, _ := json.Marshal(payload) // maps of strings, numbers and the structs above
	if run.lines {
		// JSON escapes every newline inside strings: the newline ends the event.
		return append(append(dst, b...), '\n')
	}
	dst = append(dst, "event: "...)
	dst = append(dst, event...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, b...)
	return append(dst, "\n\n"...)
}

// responseStart is a response the router has started (or, for a
// warmup, checked only): the request, the chat request it became, its
// stream and the response being made.
type responseStart struct {
	req    *responsesRequest
	chat   *request
	stream npu.Stream // nil for a warmup (generate: false)
	run    *responseRun
}

// startResponse checks r and starts it on the router, after the
// conversation a previous response left (history). A warmup checks the
// request and its model without generating.
func (a *API) startResponse(ctx context.Context, tenant string, r *responsesRequest, history []message, created int64, warmup bool) (*responseStart, *Error) {
	chat, apiErr := r.chatRequest(history)
	if apiErr != nil {
		return nil, apiErr
	}
	engineReq, apiErr := openaichat.EngineRequest(chat, chatEndpoint, a.cfg.DefaultTimeout)
	if apiErr != nil {
		return nil, r.renamed(apiErr)
	}
	// A fresh id, not the request id: a client may repeat its X-Request-ID,
	// and a stored response must not be named by a guess.
	id := "resp_" + strings.ToLower(rand.Text())
	st := &responseStart{req: r, chat: chat, run: newResponseRun(id, created, r)}
	if warmup {
		if _, err := a.router.Model(r.Model); err != nil {
			return nil, r.renamed(a.toError(err, chatEndpoint))
		}
		return st, nil
	}
	if apiErr := openaichat.DecodeImages(ctx, chat, a.cfg.Images, a.router, engineReq); apiErr != nil {
		return nil, r.renamed(apiErr)
	}
	var stream npu.Stream
	defer func() {
		if stream == nil && engineReq.Release != nil {
			engineReq.Release() // the router never took the request (however this ended)
		}
	}()
	engineReq.Tenant = tenant
	stream, err := a.router.Start(engineReq)
	if err != nil {
		return nil, r.renamed(a.toError(err, chatEndpoint))
	}
	st.stream = stream
	return st, nil
}

// stored is what the response leaves for the next one of its
// conversation and for GET.
func (st *responseStart) stored() storedResponse {
	return storedResponse{obj: st.run.obj, input: st.req.inputItems(),
		conversation: conversationAfter(st.chat.Messages, st.req.Instructions, st.run.obj.Output)}
}

// keep stores the response when it asked to be and did not fail, before
// the response object goes out: one the store cannot take (larger than a
// tenant's share, or the store full of other tenants' responses) goes out
// with store false.
func (a *API) keep(tenant string, st *responseStart) {
	if !st.run.obj.Store || st.run.obj.Status == "failed" {
		return
	}
	if !a.responses.put(tenant, st.stored()) {
		st.run.obj.Store = false
		a.log.Warn("a response was not stored: it is larger than a tenant's share of the store, or the store is full of other tenants' responses",
			"tenant", tenant, "response", st.run.obj.ID)
	}
}

// createResponse serves POST /v1/responses.
func (a *API) createResponse(c *gin.Context) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	var r responsesRequest
	if !a.decode(c, info, &r) {
		return
	}
	var history []message
	if r.PreviousResponseID != "" {
		prev, ok := a.responses.get(info.Tenant, r.PreviousResponseID)
		if !ok {
			a.fail(c.Writer, info, responseNotFound("previous_response_id", r.PreviousResponseID))
			return
		}
		history = prev.conversation
	}
	st, apiErr := a.startResponse(ctx, info.Tenant, &r, history, info.Start.Unix(), false)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	stream, run := st.stream, st.run
	info.Stream = stream
	defer stream.Close()

	if r.Stream {
		f := &responseFraming{a: a, run: run, keep: func() { a.keep(info.Tenant, st) }}
		run.builder = newResponseBuilder(run.obj.ID, f.emit)
		w := newSSEWriter(c.Writer, a.cfg.WriteTimeout)
		info.Record(relay.Run(ctx, w, stream, f, func(err error) { a.fail(c.Writer, info, r.renamed(a.toError(err, chatEndpoint))) }))
		return
	}
	run.builder = newResponseBuilder(run.obj.ID, nil)
	res, err := collect(ctx, stream.Next, run.builder)
	info.MarkFirstTokenAt(stream.FirstTokenAt())
	if err != nil {
		a.fail(c.Writer, info, r.renamed(a.toError(err, chatEndpoint)))
		return
	}
	run.end(res)
	info.TokensOut = res.CompletionTokens
	info.FinishReason = openaichat.FinishReason(res.FinishReason)
	a.keep(info.Tenant, st)
	c.Header("Content-Type", "application/json")
	c.Status(http.StatusOK)
	if err := json.NewEncoder(c.Writer).Encode(run.obj); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}

// collect reads a stream to its end into b.
func collect(ctx context.Context, next func(context.Context) (npu.Event, error), b *responseBuilder) (npu.Result, error) {
	for {
		ev, err := next(ctx)
		if err != nil {
			return npu.Result{}, err
		}
		switch {
		case ev.Heartbeat:
		case ev.Done:
			return ev.Result, nil
		default:
			b.add(&ev)
		}
	}
}

// conversationAfter is the conversation a next response continues: this
// one's messages (without its instructions, which apply to it alone) and
// its output.
func conversationAfter(msgs []message, instructions *string, output []outputItem) []message {
	if instructions != nil && *instructions != "" && len(msgs) > 0 {
		msgs = msgs[1:]
	}
	out := append([]message(nil), msgs...)
	for _, it := range output {
		switch it.Type {
		case "message":
			out = append(out, message{Role: "assistant", Content: textContent(it.Content[0].Text)})
		case "function_call":
			call := messageToolCall{ID: it.CallID, Type: "function"}
			call.Function.Name, call.Function.Arguments = it.Name, *it.Arguments
			if n := len(out); n > 0 && n > len(msgs) && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				out = append(out, message{Role: "assistant", Content: contentText{Present: true, Null: true}, ToolCalls: []messageToolCall{call}})
			}
		}
	}
	return out
}

// responseFraming is the Responses API's event stream for the relay.
type responseFraming struct {
	a     *API
	run   *responseRun
	buf   []byte
	ended bool
	// cancelled reports whether a failure is the client's own cancel
	// (the WebSocket's response.cancel); nil: there is none.
	cancelled func(error) bool
	// keep stores the ended response before its terminal event is framed,
	// so that the event says whether it was stored.
	keep func()
}

func (f *responseFraming) emit(event string, payload map[string]any) {
	f.buf = f.run.frame(f.buf, event, payload)
}

func (f *responseFraming) take() []byte {
	out := f.buf
	f.buf = nil
	return out
}

func (f *responseFraming) ContentType() string { return "text/event-stream" }

func (f *responseFraming) Open() []byte {
	f.emit("response.created", map[string]any{"response": f.run.obj})
	f.emit("response.in_progress", map[string]any{"response": f.run.obj})
	return f.take()
}

func (f *responseFraming) Text(ev *npu.Event) []byte {
	f.run.builder.add(ev)
	return f.take()
}

// Heartbeat is an SSE comment, as on chat: `: ping`, or while the model
// loads, how the load goes.
func (f *responseFraming) Heartbeat(loading *npu.LoadStatus) []byte {
	if f.run.lines {
		return nil // WebSocket pings keep the connection open
	}
	if loading == nil {
		return heartbeatFrame
	}
	return []byte(": " + loading.Progress(time.Now()) + "\n\n")
}

// Terminator: the Responses stream has no [DONE]; its terminal event is
// response.completed, .incomplete or .failed, written by End or Fail.
func (f *responseFraming) Terminator() []byte { return nil }

func (f *responseFraming) End(res npu.Result) ([]byte, string) {
	f.run.end(res)
	f.ended = true
	if f.keep != nil {
		f.keep()
	}
	event := "response.completed"
	if f.run.obj.Status == "incomplete" {
		event = "response.incomplete"
	}
	f.emit(event, map[string]any{"response": f.run.obj})
	return f.take(), openaichat.FinishReason(res.FinishReason)
}

// Fail is an error event, then response.failed: no stream ends without a
// terminal event.
func (f *responseFraming) Fail(err error) ([]byte, string, error) {
	if f.cancelled != nil && f.cancelled(err) {
		// No failure: the response ends where the client stopped it.
		f.run.builder.finish()
		f.run.obj.Output = f.run.builder.output
		f.run.obj.Status = "cancelled"
		f.emit("response.incomplete", map[string]any{"response": f.run.obj})
		return f.take(), "cancelled", nil
	}
	apiErr := f.a.toError(err, chatEndpoint)
	if apiErr.Status == statusClientClosed {
		return nil, "", err
	}
	f.run.builder.finish()
	f.run.fail(apiErr)
	f.emit("error", map[string]any{"code": f.run.obj.Error.Code, "message": apiErr.Message, "param": nil})
	f.emit("response.failed", map[string]any{"response": f.run.obj})
	return f.take(), "", err
}

func responseNotFound(param, id string) *Error {
	return &Error{Type: "invalid_request_error", Param: param, Code: "response_not_found", Base: errclass.Base{Status: http.StatusNotFound,
		Message: fmt.Sprintf("no response %q: it was not stored, was deleted or has expired, or belongs to another key", reqinfo.Clip(id))}}
}
