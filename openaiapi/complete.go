package openaiapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/daemon/jsonbody"
	"github.com/npud/npud/daemon/reqinfo"
	"github.com/npud/npud/npu"
)

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(r npu.Result) usage {
	return usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		TotalTokens: r.PromptTokens + r.CompletionTokens}
}

// finishReason maps the engine's reason to OpenAI's.
func finishReason(r npu.FinishReason) string {
	if r == npu.FinishLength {
		return "length"
	}
	return "stop"
}

// complete serves /v1/chat/completions and /v1/completions.
func (a *API) complete(c *gin.Context, ep endpoint) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	var req request
	if err := jsonbody.Decode(c.Request, &req); err != nil {
		a.fail(c.Writer, info, bodyError(err))
		return
	}
	info.Model = req.Model
	engineReq, apiErr := req.toEngineRequest(ep, a.cfg.DefaultTimeout)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	stream, err := a.runner.Start(engineReq)
	if err != nil {
		a.fail(c.Writer, info, a.toError(err, ep))
		return
	}
	defer stream.Close()
	info.Stream = stream

	id := "chatcmpl-" + info.ID
	if ep == completionsEndpoint {
		id = "cmpl-" + info.ID
	}
	enc := newChunkEncoder(ep, id, info.Start.Unix(), req.Model)
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		a.writeStream(ctx, c.Writer, info, stream, ep, enc, includeUsage)
		return
	}
	a.writeWhole(ctx, c, info, stream, ep, id, req.Model)
}

// toError classifies err for endpoint ep: on /v1/completions a context
// that is too long is the prompt's fault, as there are no messages.
func (a *API) toError(err error, ep endpoint) *Error {
	e := toError(err, a.runner.RetryAfter)
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

// writeStream relays a stream as server-sent events. The 200 is committed
// at the first event (text, heartbeat or the end), so errors that come
// first (queue full or timed out, context too long) stay real HTTP errors.
func (a *API) writeStream(ctx context.Context, rw http.ResponseWriter, info *reqinfo.Info, stream *npu.Stream, ep endpoint, enc *chunkEncoder, includeUsage bool) {
	w := newSSEWriter(rw, a.cfg.WriteTimeout)
	for {
		ev, err := stream.Next(ctx)
		if err != nil {
			a.endWithError(w, rw, info, a.toError(err, ep))
			return
		}
		if !w.Committed() {
			w.Commit("text/event-stream")
			if enc.chat {
				// The role chunk rides in the same flush as the first event.
				if err := w.Write(enc.role(), false); err != nil {
					a.clientGone(info, stream, err)
					return
				}
			}
		}
		var werr error
		switch {
		case ev.Heartbeat:
			werr = w.Write(heartbeatFrame, true)
		case ev.Done:
			info.TokensOut = ev.Result.CompletionTokens
			info.FinishReason = finishReason(ev.Result.FinishReason)
			werr = w.Write(enc.finish(info.FinishReason), !includeUsage)
			if werr == nil && includeUsage {
				werr = w.Write(enc.usage(usageOf(ev.Result)), true)
			}
			if werr == nil {
				werr = w.done()
			}
			if werr != nil {
				a.clientGone(info, stream, werr)
			}
			return
		default:
			info.MarkFirstToken()
			werr = w.Write(enc.text(ev.Text), true)
		}
		if werr != nil {
			a.clientGone(info, stream, werr)
			return
		}
	}
}

// endWithError ends a stream that failed: before the 200 as an HTTP error,
// after it in-band followed by [DONE], so no client mistakes it for success.
func (a *API) endWithError(w sseWriter, rw http.ResponseWriter, info *reqinfo.Info, apiErr *Error) {
	if !w.Committed() {
		a.fail(rw, info, apiErr)
		return
	}
	info.Fail(apiErr)
	if apiErr.Status == statusClientClosed {
		return
	}
	if err := w.Write(errorFrame(apiErr), false); err == nil {
		_ = w.done() // the client may be gone; nothing more to do
	}
}

// clientGone abandons the stream after a failed write.
func (a *API) clientGone(info *reqinfo.Info, stream *npu.Stream, err error) {
	info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	stream.Close()
}

// writeWhole collects the stream into one chat.completion or text_completion.
func (a *API) writeWhole(ctx context.Context, c *gin.Context, info *reqinfo.Info, stream *npu.Stream, ep endpoint, id, model string) {
	text, res, err := stream.Collect(ctx)
	info.MarkFirstTokenAt(stream.FirstTokenAt())
	if err != nil {
		a.fail(c.Writer, info, a.toError(err, ep))
		return
	}
	info.TokensOut = res.CompletionTokens
	info.FinishReason = finishReason(res.FinishReason)
	c.Header("Content-Type", "application/json")
	c.Status(http.StatusOK)
	if err := json.NewEncoder(c.Writer).Encode(wholeResponse(ep, id, info.Start.Unix(), model, text, info.FinishReason, usageOf(res))); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Text         *string      `json:"text,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
}

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

func wholeResponse(ep endpoint, id string, created int64, model, text, reason string, u usage) completion {
	ch := choice{FinishReason: reason}
	object := "text_completion"
	if ep == chatEndpoint {
		object = "chat.completion"
		ch.Message = &chatMessage{Role: "assistant", Content: text}
	} else {
		ch.Text = &text
	}
	return completion{ID: id, Object: object, Created: created, Model: model, Choices: []choice{ch}, Usage: u}
}
