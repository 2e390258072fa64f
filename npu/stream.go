package npu

import (
	"context"
	"strings"
	"time"
)

// Stream is one generation as its protocol writer reads it: the serving
// runtime (npu/serve) makes it, the APIs, wire and the journals read it
// through this interface, so none of them imports the runtime.
type Stream interface {
	// Next returns the next event: text, a heartbeat, or the final
	// result. After the text produced so far has been returned, a failure
	// comes back as an error; the error of a client that went away (ctx
	// done) wraps ErrClientGone. Next must be called from one goroutine at
	// a time.
	Next(ctx context.Context) (Event, error)
	// Loading says how the load of the model the request waits for goes;
	// false when it waits for no load.
	Loading() (LoadStatus, bool)
	// MaxTokensClamped is the completion limit the request's was lowered
	// to when it was admitted (see CompletionLimit), 0 when it was not:
	// known before the first event, so a writer can say it in a header.
	MaxTokensClamped() int
	// FirstTokenAt is when the engine produced its first non-empty text,
	// or zero.
	FirstTokenAt() time.Time
	// Stats describes the stream so far.
	Stats() StreamStats
	// Close abandons the stream if it has not finished. Always call it:
	// it is how a writer that stops reading frees the engine. Call it
	// from the goroutine that calls Next.
	Close()
	// Abandon ends the stream with cause (if it has not finished); the
	// engine gets Cancel at its next callback. Any goroutine may call it.
	Abandon(cause error)
}

// Event is one step of a stream as the protocol writer sees it. Exactly one
// of Text, Heartbeat and Done is set.
type Event struct {
	// Text is valid UTF-8 never containing any prefix of a stop string.
	// While the reader is behind, consecutive chunks are coalesced.
	Text string
	// Reasoning is the model's reasoning (between <think> and </think> at
	// the start of its answer), never part of Text.
	Reasoning string
	// ToolCalls are pieces of the tool calls the model is making (see
	// ToolCallDelta); text that may be part of a call is held back until
	// it is known not to be one.
	ToolCalls []ToolCallDelta
	// Tokens is how many engine callbacks with text Text holds: a token
	// each on most engines (GenAI's streamer can hand over a few at once),
	// so what a client that leaves mid-stream received is known.
	Tokens    int
	Heartbeat bool
	// Loading is set on a heartbeat while the request waits for its
	// model's load: how it goes (a first compile takes minutes on an NPU).
	Loading *LoadStatus
	Done    bool
	// Result is set with Done.
	Result Result
}

// Answer is a whole generation: its text, reasoning and tool calls.
type Answer struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	Result    Result
}

// CollectAnswer reads events from next to the end and assembles them.
// Heartbeats are skipped.
func CollectAnswer(ctx context.Context, next func(context.Context) (Event, error)) (Answer, error) {
	var b, r strings.Builder
	var calls ToolCallAssembler
	for {
		ev, err := next(ctx)
		if err != nil {
			return Answer{Text: b.String(), Reasoning: r.String(), ToolCalls: calls.Calls()}, err
		}
		b.WriteString(ev.Text)
		r.WriteString(ev.Reasoning)
		calls.Add(ev.ToolCalls)
		if ev.Done {
			return Answer{Text: b.String(), Reasoning: r.String(), ToolCalls: calls.Calls(), Result: ev.Result}, nil
		}
	}
}

// ToolCallAssembler puts pieces of tool calls back together.
type ToolCallAssembler struct {
	calls []ToolCall
}

// Add takes the next pieces; it returns the calls they completed.
func (a *ToolCallAssembler) Add(pieces []ToolCallDelta) (completed []ToolCall) {
	for _, d := range pieces {
		for len(a.calls) <= d.Index {
			a.calls = append(a.calls, ToolCall{})
		}
		c := &a.calls[d.Index]
		if d.ID != "" {
			c.ID, c.Name = d.ID, d.Name
		}
		c.Arguments += d.Arguments
		if d.Done {
			completed = append(completed, *c)
		}
	}
	return completed
}

// Calls are the calls assembled so far.
func (a *ToolCallAssembler) Calls() []ToolCall { return a.calls }
