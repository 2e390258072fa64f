package ollamaapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/streamwriter"
)

type endpoint int

const (
	generateEndpoint endpoint = iota
	chatEndpoint
)

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Thinking is the model's reasoning, apart from the answer.
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// toolCallsOf puts complete calls in Ollama's shape, arguments as an
// object. A call whose arguments are no JSON object cannot be one there:
// it comes back as text, as Ollama returns output it cannot parse.
func toolCallsOf(calls []npu.ToolCall, first int) (out []toolCall, text string) {
	for i, c := range calls {
		args := bytes.TrimSpace([]byte(c.Arguments))
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			name, _ := json.Marshal(c.Name)
			text += `{"name": ` + string(name) + `, "arguments": ` + c.Arguments + `}`
			continue
		}
		tc := toolCall{ID: c.ID}
		tc.Function.Index, tc.Function.Name, tc.Function.Arguments = first+i, c.Name, args
		out = append(out, tc)
	}
	return out, text
}

// metrics are the figures of a final object: integers, durations in ns.
type metrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// chunk is one object of a generate or chat answer. Generate objects
// always carry response, chat objects always carry message, and neither
// ever has an error key.
type chunk struct {
	Model      string       `json:"model"`
	CreatedAt  string       `json:"created_at"`
	Response   *string      `json:"response,omitempty"`
	Message    *chatMessage `json:"message,omitempty"`
	Thinking   string       `json:"thinking,omitempty"` // generate: the model's reasoning
	Done       bool         `json:"done"`
	DoneReason string       `json:"done_reason,omitempty"`
	// Status is npud's addition on a heartbeat while the model loads.
	Status string `json:"status,omitempty"`
	*metrics
}

func newChunk(ep endpoint, model, text string) chunk {
	return newThinkingChunk(ep, model, "", text)
}

// newThinkingChunk is a chunk with the model's reasoning apart: Ollama's
// message.thinking (chat) and thinking (generate).
func newThinkingChunk(ep endpoint, model, thinking, text string) chunk {
	c := chunk{Model: model, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if ep == chatEndpoint {
		c.Message = &chatMessage{Role: "assistant", Content: text, Thinking: thinking}
	} else {
		c.Response = &text
		c.Thinking = thinking
	}
	return c
}

// final is the done object with the engine's real figures.
func final(ep endpoint, model, text string, res npu.Result, start time.Time) chunk {
	c := newChunk(ep, model, text)
	c.Done = true
	c.DoneReason = string(res.FinishReason)
	if res.FinishReason != npu.FinishLength {
		c.DoneReason = "stop"
	}
	c.metrics = &metrics{
		TotalDuration:      time.Since(start).Nanoseconds(),
		LoadDuration:       (res.Timings.Queue + res.Timings.Load).Nanoseconds(), // as Ollama counts it
		PromptEvalCount:    res.PromptTokens,
		PromptEvalDuration: res.Timings.Prefill.Nanoseconds(),
		EvalCount:          res.CompletionTokens,
		EvalDuration:       res.Timings.Decode.Nanoseconds(),
	}
	return c
}

// complete serves /api/generate and /api/chat.
func (a *API) complete(c *gin.Context, ep endpoint) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	var req request
	if err := reqinfo.Decode(c.Request, &req); err != nil {
		a.fail(c.Writer, info, bodyError(err))
		return
	}
	model := req.ModelName()
	if model == "" {
		a.fail(c.Writer, info, badRequest("model is required"))
		return
	}
	m, err := a.router.Model(model)
	if err != nil {
		if ka := req.KeepAlive.duration(); ka != nil && *ka == 0 {
			a.fail(c.Writer, info, a.toErrorNoPull(err)) // an unload (npud stop): a pull would not help
			return
		}
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	if apiErr := req.checkUnsupported(model); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	engineReq := &npu.Request{Model: model, Timeout: a.cfg.DefaultTimeout, KeepAlive: req.KeepAlive.duration(), MayUnpin: info.ManagesModels, Tenant: info.Tenant}
	think, level, apiErr := req.think()
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	engineReq.Think, engineReq.ThinkLevel = think, level
	if engineReq.Format, apiErr = req.format(); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if engineReq.Tools, apiErr = req.tools(); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if apiErr := applyOptions(req.Options, engineReq, m, a.log); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if ep == generateEndpoint {
		if len(engineReq.Tools) > 0 {
			a.fail(c.Writer, info, badRequest("tools are for /api/chat: /api/generate has no messages to carry calls and results"))
			return
		}
		if req.Prompt == "" && req.System == "" {
			a.loadOrUnload(c, ep, model, req.KeepAlive.duration())
			return
		}
		engineReq.Prompt, engineReq.Messages = req.generateMessages()
	} else {
		if len(req.Messages) == 0 {
			a.loadOrUnload(c, ep, model, req.KeepAlive.duration())
			return
		}
		engineReq.Messages = chatMessages(req.Messages)
		// Ollama keeps a chat inside num_ctx by dropping its oldest turns.
		engineReq.DropOldestTurns = true
	}
	if len(req.Images) > 0 && ep == chatEndpoint {
		a.fail(c.Writer, info, badRequest("images go with a message on /api/chat: messages[].images"))
		return
	}
	if apiErr := req.decodeImages(a.cfg.Images, m, ep, engineReq, a.router.RetryAfter); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	var stream npu.Stream
	defer func() {
		if stream == nil {
			releaseImages(engineReq) // however this ended
		}
	}()
	// The engine's own limits, shared with the OpenAI API.
	if err := engineReq.Validate(); err != nil {
		a.fail(c.Writer, info, optionError(err))
		return
	}
	stream, err = a.router.Start(engineReq)
	if err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	defer stream.Close()
	info.Stream = stream
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), stream.MaxTokensClamped())
	if req.stream() {
		a.writeStream(ctx, c.Writer, wantsSSE(c.Request), info, stream, ep, model)
		return
	}
	a.writeWhole(ctx, c.Writer, info, stream, ep, model)
}

// releaseImages gives back the image memory of a request the router never
// took (the router releases those it took when their generation ends).
func releaseImages(req *npu.Request) {
	if req.Release != nil {
		req.Release()
	}
}

// wantsSSE: Ollama streams NDJSON only; some web clients ask for SSE.
func wantsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// loadOrUnload answers an empty prompt or message list: it loads the
// model, or unloads it with keep_alive 0, and says which.
func (a *API) loadOrUnload(c *gin.Context, ep endpoint, model string, keepAlive *time.Duration) {
	info := reqinfo.From(c.Request.Context())
	reason := "load"
	var err error
	if keepAlive != nil && *keepAlive == 0 {
		reason = "unload"
		if a.router.Preloaded(model) && !info.ManagesModels {
			// The operator pinned it for every tenant.
			a.fail(c.Writer, info, &Error{Base: errclass.Base{Status: http.StatusForbidden,
				Message: fmt.Sprintf("model %q is preloaded (--preload) and kept loaded for everyone: unloading it needs an admin key", model)}})
			return
		}
		if err = a.router.UnloadModel(c.Request.Context(), model); err != nil {
			a.fail(c.Writer, info, a.toErrorNoPull(err))
			return
		}
	} else if _, err = a.router.LoadModel(c.Request.Context(), model, keepAlive); err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	info.FinishReason = reason
	out := newChunk(ep, model, "")
	out.Done, out.DoneReason = true, reason
	c.JSON(http.StatusOK, out)
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

// writeStream relays a stream as NDJSON (or SSE), through the relay every
// streaming protocol shares: the 200 is committed at the first event, so
// early failures stay real HTTP errors.
func (a *API) writeStream(ctx context.Context, rw http.ResponseWriter, sse bool, info *reqinfo.Info, stream npu.Stream, ep endpoint, model string) {
	info.Record(relay.Run(ctx, streamwriter.New(rw, a.cfg.WriteTimeout), stream, &lineFraming{sse: sse, ep: ep, model: model, start: info.Start, a: a},
		func(err error) { a.fail(rw, info, a.toError(err)) }))
}

// lineFraming is Ollama's stream: one JSON object a line (or an SSE
// event), the last one done: true; a failure is a last line {"error": …}
// with no done object.
type lineFraming struct {
	sse   bool
	ep    endpoint
	model string
	start time.Time
	a     *API
	calls npu.ToolCallAssembler
	sent  int // tool calls written
}

func (f *lineFraming) ContentType() string {
	if f.sse {
		return "text/event-stream"
	}
	return "application/x-ndjson"
}

func (f *lineFraming) frame(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil // a chunk of strings and numbers always encodes
	}
	if f.sse {
		return append(append([]byte("data: "), b...), "\n\n"...)
	}
	return append(b, '\n')
}

func (f *lineFraming) Open() []byte { return nil }

// Text frames text and reasoning as they come; tool calls go out whole,
// each in the chunk of the event that completed it, as Ollama sends them.
func (f *lineFraming) Text(ev *npu.Event) []byte {
	completed := f.calls.Add(ev.ToolCalls)
	if len(completed) == 0 && len(ev.ToolCalls) > 0 && ev.Text == "" && ev.Reasoning == "" {
		return nil // a call still coming
	}
	c := newThinkingChunk(f.ep, f.model, ev.Reasoning, ev.Text)
	if len(completed) > 0 {
		calls, asText := toolCallsOf(completed, f.sent)
		f.sent += len(completed)
		if c.Message != nil {
			c.Message.ToolCalls = calls
			c.Message.Content += asText
		} else {
			*c.Response += asText
		}
	}
	return f.frame(c)
}

// Heartbeat is an ordinary empty chunk: every client accepts it. While
// the model loads it also carries "status" (npud's addition, as in
// Ollama's pull progress): Ollama's own CLI shows only a spinner while a
// model loads, and its clients ignore fields they do not know.
func (f *lineFraming) Heartbeat(loading *npu.LoadStatus) []byte {
	c := newChunk(f.ep, f.model, "")
	if loading != nil {
		c.Status = loading.Progress(time.Now())
	}
	return f.frame(c)
}
func (f *lineFraming) Terminator() []byte { return nil }

func (f *lineFraming) End(res npu.Result) ([]byte, string) {
	out := final(f.ep, f.model, "", res, f.start)
	return f.frame(out), out.DoneReason
}

func (f *lineFraming) Fail(err error) ([]byte, string, error) {
	apiErr := f.a.toError(err)
	if apiErr.Status == statusClientClosed {
		return nil, "", err
	}
	return f.frame(map[string]string{"error": apiErr.Message}), "", err
}

// writeWhole answers stream: false with one object.
func (a *API) writeWhole(ctx context.Context, rw http.ResponseWriter, info *reqinfo.Info, stream npu.Stream, ep endpoint, model string) {
	answer, err := npu.CollectAnswer(ctx, stream.Next)
	info.MarkFirstTokenAt(stream.FirstTokenAt())
	if err != nil {
		a.fail(rw, info, a.toError(err))
		return
	}
	info.TokensOut = answer.Result.CompletionTokens
	calls, asText := toolCallsOf(answer.ToolCalls, 0)
	out := final(ep, model, answer.Text+asText, answer.Result, info.Start)
	if out.Message != nil {
		out.Message.Thinking = answer.Reasoning
		out.Message.ToolCalls = calls
	} else {
		out.Thinking = answer.Reasoning
	}
	info.FinishReason = out.DoneReason
	// An engine that cannot count the prompt beforehand says at its end.
	reqinfo.SetMaxTokensClamped(rw.Header(), answer.Result.MaxTokensClamped)
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	rw.WriteHeader(http.StatusOK)
	if err := json.NewEncoder(rw).Encode(out); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}

// ollamaOptions are the Ollama names of the sampling parameters
// npu.Request.Validate names.
var ollamaOptions = map[string]string{
	"temperature": "temperature", "top_p": "top_p", "min_p": "min_p", "top_k": "top_k",
	"repetition_penalty": "repeat_penalty", "presence_penalty": "presence_penalty",
	"frequency_penalty": "frequency_penalty", "max_tokens": "num_predict", "stop": "stop",
}

// optionError renders a refusal of npu.Request.Validate as a 400 that
// names the option as an Ollama client knows it.
func optionError(err error) *Error {
	var ie *npu.InvalidRequestError
	if errors.As(err, &ie) {
		if name, ok := ollamaOptions[ie.Param]; ok {
			return &Error{Base: errclass.Base{Status: http.StatusBadRequest,
				Message: fmt.Sprintf("option %q is outside what the engine accepts: %s", name, ie.Message), Cause: err}}
		}
	}
	return &Error{Base: errclass.Base{Status: http.StatusBadRequest, Message: err.Error(), Cause: err}}
}
