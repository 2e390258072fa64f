package anthropicapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
	"github.com/npud/npud/wire/streamwriter"
)

// versionPattern is the shape of an anthropic-version (a date). npud
// answers as version 2023-06-01 does, the one Anthropic's SDKs send.
var versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// StopReason maps the engine's finish reason to Anthropic's stop_reason.
func StopReason(res npu.Result) string {
	switch {
	case res.FinishReason == npu.FinishLength:
		return "max_tokens"
	case res.FinishReason == npu.FinishToolCalls:
		return "tool_use"
	case res.StopSequence != "":
		return "stop_sequence"
	}
	return "end_turn"
}

func stopSequence(res npu.Result) *string {
	if res.StopSequence == "" || res.FinishReason == npu.FinishLength || res.FinishReason == npu.FinishToolCalls {
		return nil
	}
	s := res.StopSequence
	return &s
}

// usage is Anthropic's usage object.
type usage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
	// npud writes no prompt cache entries a client pays for.
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

// usageOf counts as Anthropic does: input_tokens is the part of the
// prompt that was not read from the cache.
func usageOf(r npu.Result) usage {
	return usage{InputTokens: r.PromptTokens - r.CachedPromptTokens, OutputTokens: r.CompletionTokens,
		CacheReadInputTokens: r.CachedPromptTokens}
}

// messages serves POST /v1/messages.
func (a *API) messages(c *gin.Context) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	if v := c.GetHeader("anthropic-version"); v != "" && !versionPattern.MatchString(v) {
		a.fail(c.Writer, info, invalid("anthropic-version: %q is not a version (a date such as 2023-06-01)", reqinfo.Clip(v)))
		return
	}
	var req request
	if !a.decode(c, info, &req) {
		return
	}
	p, apiErr := req.toEngineRequest(a.cfg.DefaultTimeout)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if apiErr := a.prepare(ctx, p, false); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	var src npu.Stream
	defer func() {
		if src == nil && p.req.Release != nil {
			p.req.Release() // the router never took the request (however this ended): its images' memory goes back
		}
	}()
	p.req.Tenant = info.Tenant
	src, err := a.router.Start(p.req)
	if err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	info.Stream = src
	defer src.Close()
	// A clamp the router made at admission is known now.
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), src.MaxTokensClamped())
	id := "msg_" + info.ID
	if req.Stream {
		w := streamwriter.New(c.Writer, a.cfg.WriteTimeout)
		info.Record(relay.Run(ctx, w, src, &framing{a: a, id: id, model: req.Model},
			func(err error) { a.fail(c.Writer, info, a.toError(err)) }))
		return
	}
	a.writeWhole(ctx, c, info, src, id, req.Model)
}

// prepare checks the model before anything costly (a 404 names how to
// alias it; images go only to a model that takes them, and are decoded
// only then, or with sizeOnly only measured). max_tokens is npu.CompletionLimit's, as on every API:
// Anthropic's clients send their own model's output limit, often more than
// a local model's whole context, and a limit larger than the room the
// prompt leaves is clamped to that room (by the router when the engine
// counts the prompt, else by the engine), not refused.
func (a *API) prepare(ctx context.Context, p *parsed, sizeOnly bool) *Error {
	m, err := a.router.Model(p.req.Model)
	if err != nil {
		return a.toError(err)
	}
	if len(p.images) > 0 && !m.Details.Vision {
		return invalid("model %q does not take images: its folder holds no vision encoder", m.ID)
	}
	return p.decodeImages(ctx, a.cfg.Images, sizeOnly, a.toError)
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

func (a *API) toError(err error) *Error {
	return toError(err, a.router.RetryAfter, func() []string { return errclass.ServedNames(a.router) })
}

// fail answers an error before the response began.
func (a *API) fail(rw http.ResponseWriter, info *reqinfo.Info, e *Error) {
	info.Fail(e)
	if e.Status == errclass.StatusClientClosed {
		info.Status = errclass.StatusClientClosed // nobody to answer
		return
	}
	WriteError(rw, e)
}

// contentBlock is a block of the message object.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type messageObject struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: &s} }

// thinkingBlock carries the model's reasoning. Its signature is empty:
// npud signs nothing, and takes thinking blocks back without checking one.
func thinkingBlock(s string) contentBlock {
	sig := ""
	return contentBlock{Type: "thinking", Thinking: &s, Signature: &sig}
}

// unparsedArgumentsKey holds a call's arguments that are not a JSON
// object (the model wrote them so): tool_use input must be an object, and
// nothing the model wrote is dropped.
const unparsedArgumentsKey = "npud_unparsed_arguments"

func toolInput(arguments string) json.RawMessage {
	if arguments == "" {
		return json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(arguments), &obj) == nil && obj != nil {
		return json.RawMessage(arguments)
	}
	b, _ := json.Marshal(map[string]string{unparsedArgumentsKey: arguments}) // a string map always encodes
	return b
}

// writeWhole collects the stream into one message object.
func (a *API) writeWhole(ctx context.Context, c *gin.Context, info *reqinfo.Info, src npu.Stream, id, model string) {
	answer, err := npu.CollectAnswer(ctx, src.Next)
	info.MarkFirstTokenAt(src.FirstTokenAt())
	if err != nil {
		a.fail(c.Writer, info, a.toError(err))
		return
	}
	info.TokensOut = answer.Result.CompletionTokens
	info.FinishReason = string(answer.Result.FinishReason)
	// An engine that cannot count the prompt beforehand says at its end.
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), answer.Result.MaxTokensClamped)
	msg := messageObject{ID: id, Type: "message", Role: "assistant", Model: model, Content: []contentBlock{},
		StopSequence: stopSequence(answer.Result), Usage: usageOf(answer.Result)}
	reason := StopReason(answer.Result)
	msg.StopReason = &reason
	if answer.Reasoning != "" {
		msg.Content = append(msg.Content, thinkingBlock(answer.Reasoning))
	}
	if answer.Text != "" || len(answer.ToolCalls) == 0 {
		msg.Content = append(msg.Content, textBlock(answer.Text))
	}
	for _, call := range answer.ToolCalls {
		msg.Content = append(msg.Content, contentBlock{Type: "tool_use", ID: call.ID, Name: call.Name, Input: toolInput(call.Arguments)})
	}
	c.Header("Content-Type", "application/json")
	c.Status(http.StatusOK)
	if err := json.NewEncoder(c.Writer).Encode(msg); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}
