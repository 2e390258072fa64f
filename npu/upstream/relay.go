package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
)

// relay reads the upstream's event stream into the sink: an eventDecoder
// reads the chunks, a relayer hands each delta to the bridge. The sink
// takes text, so what the upstream sent structured is written in the
// relayed family's form (chatfmt.Relayed), which the bridge reads back:
// reasoning between <think> tags, tool calls (only from the upstream's
// structured delta.tool_calls, and only to tools the request declared) in
// markers no relayed text can hold (NUL is kept out). max_tokens is kept
// here too: an upstream that ignores it is cut off.
func (e *Engine) relay(ctx context.Context, cancel context.CancelFunc, body io.Reader, req *npu.Request, sink npu.Sink, start time.Time) (npu.Result, error) {
	r := &relayer{e: e, req: req, sink: sink, cancel: cancel, start: start, res: npu.Result{FinishReason: npu.FinishStop}}
	dec := newEventDecoder(ctx, body, e.cfg.Timeout)
	defer dec.stop()
	for {
		c, err := dec.next(ctx)
		switch {
		case errors.Is(err, io.EOF): // [DONE]
			r.end()
			return r.result(), nil
		case errors.Is(err, errEndedHere):
			return r.result(), nil // the sink ended it
		case err != nil:
			return r.result(), e.streamFailure(ctx, cancel, err)
		}
		if more, err := r.chunk(c); !more || err != nil {
			return r.result(), err
		}
	}
}

// streamFailure is the error for a stream that failed (see
// eventDecoder.next), in npud's words.
func (e *Engine) streamFailure(ctx context.Context, cancel context.CancelFunc, err error) error {
	var broken *brokenStream
	var failed *failedMidStream
	switch {
	case errors.As(err, &failed):
		e.log.Warn("upstream failed mid-stream", "upstream", e.cfg.Name, "answer", e.clip(errorMessage(failed.data)))
		return &npu.EngineError{Engine: e.Name(), Cause: fmt.Errorf("upstream %q failed mid-stream (its error is in npud's log)", e.cfg.Name)}
	case errors.As(err, &broken):
		return e.broken(cancel, broken)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err // the request ended while waiting
	}
	return &npu.EngineError{Engine: e.Name(), Cause: fmt.Errorf("upstream %q: %w", e.cfg.Name, err)}
}

// broken is the error for a stream that broke; a stalled or unreadable one
// takes the upstream out of rotation.
func (e *Engine) broken(cancel context.CancelFunc, b *brokenStream) error {
	var cause error
	switch b.how {
	case streamStalled:
		cancel()
		why := fmt.Sprintf("it sent nothing for %s in the middle of a stream", e.cfg.Timeout)
		e.markDown(why)
		cause = fmt.Errorf("upstream %q: %s: %w", e.cfg.Name, why, npu.ErrUpstreamUnavailable)
	case streamUnreadable:
		e.markDown(b.err.Error())
		cause = fmt.Errorf("upstream %q: reading its stream: %w", e.cfg.Name, b.err)
	case streamMalformed:
		cause = fmt.Errorf("upstream %q sent a malformed event: %w", e.cfg.Name, b.err)
	default:
		cause = fmt.Errorf("upstream %q ended its stream without [DONE]", e.cfg.Name)
	}
	return &npu.EngineError{Engine: e.Name(), Cause: cause}
}

// errEndedHere: the stream closed because npud ended the request (the
// sink answered Stop or Cancel), not the upstream.
var errEndedHere = errors.New("the request was ended here")

// How an upstream's stream broke.
type breakage int

const (
	streamUnfinished breakage = iota // it closed before [DONE]
	streamStalled                    // it sent nothing for the timeout
	streamUnreadable                 // reading it failed
	streamMalformed                  // an event is no chunk
)

// brokenStream is an upstream's stream that broke.
type brokenStream struct {
	how breakage
	err error // what reading or decoding said, if anything
}

func (b *brokenStream) Error() string {
	what := [...]string{"closed before [DONE]", "stalled", "unreadable", "malformed"}[b.how]
	if b.err != nil {
		return what + ": " + b.err.Error()
	}
	return what
}

func (b *brokenStream) Unwrap() error { return b.err }

// failedMidStream is an error event where a chunk would be; data is the
// event, for the log only.
type failedMidStream struct{ data []byte }

func (f *failedMidStream) Error() string { return "the upstream failed mid-stream" }

// eventDecoder reads an upstream's event stream into chunks. Its reader
// runs in a goroutine that can be abandoned, so that each wait is bounded
// by idle, not by the upstream.
type eventDecoder struct {
	lines   chan string
	readErr chan error
	idle    *time.Timer
	timeout time.Duration
}

func newEventDecoder(ctx context.Context, body io.Reader, timeout time.Duration) *eventDecoder {
	d := &eventDecoder{lines: make(chan string), readErr: make(chan error, 1), idle: time.NewTimer(timeout), timeout: timeout}
	go func() {
		var err error
		defer func() {
			d.readErr <- err
			close(d.lines)
		}()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), maxEventBytes)
		for sc.Scan() {
			select {
			case d.lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		err = sc.Err()
	}()
	return d
}

func (d *eventDecoder) stop() { d.idle.Stop() }

// next is the next chunk the upstream sent. It returns io.EOF after
// [DONE]; errEndedHere when the stream closed because ctx ended; ctx's
// error when it ended while waiting; *failedMidStream for an error event;
// *brokenStream when the stream broke, stalled, or was malformed.
func (d *eventDecoder) next(ctx context.Context) (openaiwire.ChatChunk, error) {
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-d.lines:
		case <-d.idle.C:
			return openaiwire.ChatChunk{}, &brokenStream{how: streamStalled}
		case <-ctx.Done():
			return openaiwire.ChatChunk{}, ctx.Err()
		}
		if !ok {
			return openaiwire.ChatChunk{}, d.closed(ctx)
		}
		d.idle.Reset(d.timeout)
		data, isData := strings.CutPrefix(line, "data:")
		if !isData {
			continue // comments (heartbeats), event:, id:, retry: and blank lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			return openaiwire.ChatChunk{}, io.EOF
		}
		var c openaiwire.ChatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return c, &brokenStream{how: streamMalformed, err: err}
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return c, &failedMidStream{data: []byte(data)}
		}
		return c, nil
	}
}

// closed is why the stream closed before [DONE].
func (d *eventDecoder) closed(ctx context.Context) error {
	if err := <-d.readErr; err != nil && ctx.Err() == nil {
		return &brokenStream{how: streamUnreadable, err: err}
	}
	if ctx.Err() != nil {
		return errEndedHere
	}
	return &brokenStream{how: streamUnfinished}
}

// relayer hands one generation's deltas to the sink.
type relayer struct {
	e      *Engine
	req    *npu.Request
	sink   npu.Sink
	cancel context.CancelFunc // closes the upstream request
	start  time.Time
	res    npu.Result

	first     time.Time
	callbacks int
	events    int // events with output, for max_tokens
	textBytes int
	thinking  bool         // inside the reasoning's tags
	call      *relayedCall // the call being received, nil: none
}

// relayedCall is a tool call being received from the upstream.
type relayedCall struct {
	index     int
	ID        string
	Name      string
	Arguments string
}

// result is the generation's result so far, with its timings.
func (r *relayer) result() npu.Result {
	res := r.res
	if !r.first.IsZero() {
		res.Timings.Prefill, res.Timings.Decode = r.first.Sub(r.start), time.Since(r.first)
	} else {
		res.Timings.Prefill = time.Since(r.start)
	}
	if res.CompletionTokens == 0 {
		res.CompletionTokens = r.callbacks
	}
	if r.req.MaxTokens > 0 {
		res.CompletionTokens = min(res.CompletionTokens, r.req.MaxTokens)
	}
	return res
}

// chunk hands one chunk's deltas on; false when the generation ends here.
func (r *relayer) chunk(c openaiwire.ChatChunk) (bool, error) {
	if c.Usage != nil {
		r.res.PromptTokens, r.res.CompletionTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	if r.overMaxTokens(c) {
		return false, nil
	}
	for _, ch := range c.Choices {
		if more, err := r.choice(ch); !more || err != nil {
			return false, err
		}
	}
	return true, nil
}

// overMaxTokens cuts the generation off when the upstream went past
// max_tokens: what came before this event is the answer (a call cut short
// is dropped).
func (r *relayer) overMaxTokens(c openaiwire.ChatChunk) bool {
	n := outputBytes(c)
	if n == 0 {
		return false
	}
	r.events++
	r.textBytes += n
	if r.req.MaxTokens == 0 || (r.events <= r.req.MaxTokens && r.textBytes <= r.req.MaxTokens*maxTokenBytes) {
		return false
	}
	r.cancel()
	if r.call != nil {
		r.e.log.Warn("upstream went past max_tokens in a tool call; the call is dropped", "upstream", r.e.cfg.Name)
	}
	if r.thinking {
		r.send(chatfmt.ThinkClose)
	}
	r.res.FinishReason = npu.FinishLength
	return true
}

// choice hands one choice's delta on: its calls, reasoning and content,
// in that order.
func (r *relayer) choice(ch openaiwire.ChunkChoice) (bool, error) {
	for _, tc := range ch.Delta.ToolCalls {
		if more, err := r.toolCall(tc); !more || err != nil {
			return false, err
		}
	}
	reasoning := ch.Delta.ReasoningContent
	if reasoning == nil {
		reasoning = ch.Delta.Reasoning
	}
	if reasoning != nil && !r.reasoning(*reasoning) {
		return false, nil
	}
	if ch.Delta.Content != nil && !r.content(*ch.Delta.Content) {
		return false, nil
	}
	if ch.FinishReason != nil && *ch.FinishReason == openaiwire.FinishLength {
		r.res.FinishReason = npu.FinishLength
	}
	return true, nil
}

// toolCall takes a piece of a call: a new index or a name begins a call
// (and ends the one before), arguments add to it.
func (r *relayer) toolCall(tc openaiwire.ToolCallDelta) (bool, error) {
	if r.call == nil || tc.Index != r.call.index || tc.Function.Name != "" {
		if !r.endCall() {
			return false, nil
		}
		r.call = &relayedCall{index: tc.Index, ID: tc.ID, Name: tc.Function.Name}
	}
	if len(r.call.Arguments)+len(tc.Function.Arguments) > maxEventBytes {
		return false, &npu.EngineError{Engine: r.e.Name(), Cause: fmt.Errorf(
			"upstream %q sent a tool call with more than %d bytes of arguments", r.e.cfg.Name, maxEventBytes)}
	}
	r.call.Arguments += tc.Function.Arguments
	return true, nil
}

// reasoning takes a piece of reasoning: the first opens the tags.
func (r *relayer) reasoning(text string) bool {
	if text == "" {
		return true
	}
	text = noNUL(text)
	if !r.thinking {
		text, r.thinking = chatfmt.ThinkOpen+text, true
	}
	return r.send(text)
}

// content takes a piece of the answer: it ends a call being received and
// the reasoning.
func (r *relayer) content(text string) bool {
	if text == "" {
		return true
	}
	if !r.endCall() {
		return false
	}
	text = noNUL(text)
	if r.thinking {
		text, r.thinking = chatfmt.ThinkClose+text, false
	}
	return r.send(text)
}

// end ends the answer after [DONE]: the last call, the reasoning.
func (r *relayer) end() {
	if r.call != nil && !r.endCall() {
		return
	}
	if r.thinking {
		r.send(chatfmt.ThinkClose)
	}
}

// endCall hands the call received so far to the bridge, if it is to a
// declared tool.
func (r *relayer) endCall() bool {
	c := r.call
	r.call = nil
	if c == nil {
		return true
	}
	if !declared(r.req.Tools, c.Name) {
		r.e.log.Warn("upstream called a tool the request does not declare; the call is dropped",
			"upstream", r.e.cfg.Name, "tool", r.e.clip(c.Name))
		return true
	}
	if c.Arguments == "" {
		c.Arguments = "{}"
	}
	text := chatfmt.Relayed{}.WriteCalls([]chatfmt.Call{{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
	if r.thinking {
		text, r.thinking = chatfmt.ThinkClose+text, false
	}
	return r.send(text)
}

// send hands text to the sink; false when the sink ended the generation.
func (r *relayer) send(text string) bool {
	if text == "" {
		return true
	}
	if r.first.IsZero() {
		r.first = time.Now()
	}
	r.callbacks++
	if st := r.sink(text); st != npu.Running {
		if st == npu.Cancel {
			r.res.FinishReason = npu.FinishCancelled
		}
		r.cancel() // closes the upstream request: its engine stops too
		return false
	}
	return true
}

// declared reports whether the request declares a tool named name.
func declared(tools []npu.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// outputBytes is how much output an event carries: text, reasoning and
// call arguments.
func outputBytes(c openaiwire.ChatChunk) int {
	n := 0
	for _, ch := range c.Choices {
		if ch.Delta.Content != nil {
			n += len(*ch.Delta.Content)
		}
		if ch.Delta.ReasoningContent != nil {
			n += len(*ch.Delta.ReasoningContent)
		} else if ch.Delta.Reasoning != nil {
			n += len(*ch.Delta.Reasoning)
		}
		for _, tc := range ch.Delta.ToolCalls {
			n += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	return n
}

// noNUL keeps NUL out of relayed text: it would open no call (see
// chatfmt.Relayed), but it has no place in an answer either.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
