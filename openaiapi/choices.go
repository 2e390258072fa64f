package openaiapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/relay"
	"github.com/npud/npud/wire/reqinfo"
)

// choices runs the n generations of a request with n > 1 one after
// another (an engine generates one answer a time; on the NPU one at a
// time anyway), each one choice. It reads as one source: when a choice
// ends and another follows, Next returns an empty event and boundary says
// so, and the framing writes the choice's end and the next one's start.
// With a seed, choice i runs with seed+i, so the choices differ as
// OpenAI's do.
type choices struct {
	start  func(*npu.Request) (npu.Stream, error)
	base   *npu.Request
	n      int
	index  int        // the choice being generated
	stream npu.Stream // its stream; nil before it starts and between choices
	last   npu.Stream // the latest stream started, for the access log's stats
	// ended is the result of the choice that just ended, until the
	// framing took it (boundary).
	ended *npu.Result
	total npu.Result // the usage so far
	// firstTokenAt is the first choice's first token.
	firstTokenAt time.Time
	release      func() // the request's images, once every choice ended
}

func newChoices(start func(*npu.Request) (npu.Stream, error), req *npu.Request, n int) *choices {
	c := &choices{start: start, base: req, n: n, release: req.Release}
	req.Release = nil // the choices share the images: released once, at close
	return c
}

// request is choice i's engine request.
func (c *choices) request(i int) *npu.Request {
	r := *c.base
	if s := c.base.Sampling.Seed; s != nil && i > 0 {
		seed := *s + int64(i)
		r.Sampling.Seed = &seed
	}
	return &r
}

// open starts the first choice, so that a refusal (unknown model, full
// queue) is a real HTTP error before anything is written.
func (c *choices) open() error {
	s, err := c.start(c.request(0))
	c.stream, c.last = s, s
	return err
}

// Next implements relay.Source: the current choice's events, an empty
// event between two choices, and the last choice's end with the usage of
// them all.
func (c *choices) Next(ctx context.Context) (npu.Event, error) {
	if c.stream == nil {
		s, err := c.start(c.request(c.index))
		if err != nil {
			return npu.Event{}, err
		}
		c.stream, c.last = s, s
	}
	ev, err := c.stream.Next(ctx)
	if err != nil || !ev.Done {
		if c.firstTokenAt.IsZero() {
			c.firstTokenAt = c.stream.FirstTokenAt()
		}
		return ev, err
	}
	c.add(ev.Result)
	if c.index == c.n-1 {
		ev.Result = c.usage(ev.Result)
		return ev, nil
	}
	res := ev.Result
	c.ended = &res
	c.stream.Close()
	c.stream = nil
	c.index++
	return npu.Event{}, nil
}

// boundary is the result of the choice that just ended when another one
// follows (once); nil otherwise.
func (c *choices) boundary() *npu.Result {
	r := c.ended
	c.ended = nil
	return r
}

func (c *choices) add(r npu.Result) {
	if c.index == 0 {
		// The prompt is the same for every choice: counted once, as
		// OpenAI counts it.
		c.total.PromptTokens, c.total.CachedPromptTokens = r.PromptTokens, r.CachedPromptTokens
	}
	c.total.CompletionTokens += r.CompletionTokens
	c.total.MaxTokensClamped = max(c.total.MaxTokensClamped, r.MaxTokensClamped)
}

// usage is the last choice's result with the usage of every choice.
func (c *choices) usage(last npu.Result) npu.Result {
	last.PromptTokens, last.CachedPromptTokens = c.total.PromptTokens, c.total.CachedPromptTokens
	last.CompletionTokens, last.MaxTokensClamped = c.total.CompletionTokens, c.total.MaxTokensClamped
	return last
}

func (c *choices) close() {
	if c.stream != nil {
		c.stream.Close()
		c.stream = nil
	}
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// source is c as what the writers read.
func (c *choices) source() *source {
	return &source{next: c.Next, firstTokenAt: func() time.Time { return c.firstTokenAt }, close: c.close}
}

// completeChoices serves a chat or legacy completion with n > 1, streamed
// or whole. Joining by Idempotency-Key is for one generation; a request
// of n is refused it.
func (a *API) completeChoices(c *gin.Context, info *reqinfo.Info, req *request, engineReq *npu.Request, ep endpoint, n int) {
	ctx := c.Request.Context()
	ch := newChoices(a.router.Start, engineReq, n)
	defer ch.close()
	if c.GetHeader("Idempotency-Key") != "" {
		a.fail(c.Writer, info, invalid("n", "unsupported_value", "'n' must be 1 with an Idempotency-Key: a joinable stream is one generation"))
		return
	}
	if err := ch.open(); err != nil {
		a.fail(c.Writer, info, a.toError(err, ep))
		return
	}
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), ch.stream.MaxTokensClamped())
	info.Stream = ch
	id := "chatcmpl-" + info.ID
	if ep == completionsEndpoint {
		id = "cmpl-" + info.ID
	}
	legacy := openaichat.UsesFunctions(req)
	if req.Stream {
		src := ch.source()
		enc := newChunkEncoder(ep, id, info.Start.Unix(), req.Model)
		enc.functions = legacy
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		w := newSSEWriter(c.Writer, a.cfg.WriteTimeout)
		info.Record(relay.Run(ctx, w, sourceEvents(src.next), &sseFraming{a: a, ep: ep, src: src, enc: enc, includeUsage: includeUsage, choices: ch},
			func(err error) { a.fail(c.Writer, info, a.toError(err, ep)) }))
		return
	}
	answers := make([]npu.Answer, 0, n)
	for i := range n {
		answer, err := ch.whole(ctx, i)
		info.MarkFirstTokenAt(ch.firstTokenAt)
		if err != nil {
			a.fail(c.Writer, info, a.toError(err, ep))
			return
		}
		answers = append(answers, answer)
	}
	total := ch.usage(answers[n-1].Result)
	info.TokensOut = total.CompletionTokens
	info.FinishReason = finishReason(openaichat.FinishReason(total.FinishReason), legacy)
	reqinfo.SetMaxTokensClamped(c.Writer.Header(), total.MaxTokensClamped)
	var out completion
	for i, answer := range answers {
		one := wholeResponse(ep, id, info.Start.Unix(), req.Model, answer, finishReason(openaichat.FinishReason(answer.Result.FinishReason), legacy), legacy)
		one.Choices[0].Index = i
		if i == 0 {
			out = one
			continue
		}
		out.Choices = append(out.Choices, one.Choices[0])
	}
	out.Usage = openaichat.UsageOf(total)
	c.Header("Content-Type", "application/json")
	c.Status(http.StatusOK)
	if err := json.NewEncoder(c.Writer).Encode(out); err != nil {
		info.Fail(fmt.Errorf("%w: %w", reqinfo.ErrWrite, err))
	}
}

// whole collects choice i (the first was opened already).
func (c *choices) whole(ctx context.Context, i int) (npu.Answer, error) {
	c.index = i
	if c.stream == nil {
		s, err := c.start(c.request(i))
		if err != nil {
			return npu.Answer{}, err
		}
		c.stream, c.last = s, s
	}
	answer, err := npu.CollectAnswer(ctx, c.stream.Next)
	if c.firstTokenAt.IsZero() {
		c.firstTokenAt = c.stream.FirstTokenAt()
	}
	c.stream.Close()
	c.stream = nil
	if err == nil {
		c.add(answer.Result)
	}
	return answer, err
}

// Stats describes the choice being generated, or the last one.
func (c *choices) Stats() npu.StreamStats { return c.last.Stats() }

// finishReason is OpenAI's reason in the legacy form when the request
// declared functions: a call ends the answer with "function_call".
func finishReason(reason string, functions bool) string {
	if functions && reason == openaiwire.FinishToolCalls {
		return "function_call"
	}
	return reason
}
