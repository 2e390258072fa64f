package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// StreamLimits bound one stream.
type StreamLimits struct {
	// MaxPendingBytes is the hard limit on text the reader has not taken
	// yet; past it the engine is cancelled and the stream ends with
	// ErrSlowConsumer.
	MaxPendingBytes int
	// TokenTimeout is the longest the engine may go without producing text
	// once it started; then the stream ends with ErrTokenTimeout.
	TokenTimeout time.Duration
	// Heartbeat, when positive, makes Next return a heartbeat event after
	// that long without any other event, also while queued.
	Heartbeat time.Duration
}

// Stream is the bridge between one generation's engine callbacks (the
// producer, any thread) and its protocol writer (the consumer, the HTTP
// handler). The producer never waits for the consumer: text is appended to a
// pending buffer that the consumer takes whole, so a slow reader gets larger
// chunks rather than slowing the engine, up to MaxPendingBytes.
type Stream struct {
	req     *npu.Request
	limits  StreamLimits
	obs     npu.Observer
	created time.Time
	ctx     context.Context // ends when the stream is abandoned; its cause says why
	cancel  context.CancelCauseFunc
	notify  chan struct{} // capacity 1: "something changed"
	timer   *time.Timer   // consumer-side wake-ups, reused

	mu           sync.Mutex
	pending      []byte
	utf8         npu.UTF8Assembler
	stops        npu.StopMatcher
	stopReason   npu.FinishReason // set when the bridge answered Stop: FinishStop or FinishLength
	started      time.Time        // engine start; zero while queued
	lastActivity time.Time        // last engine callback, or engine start
	firstToken   time.Time
	lastEvent    time.Time // last event handed to the consumer
	lastText     time.Time // last text handed to the consumer
	device       string
	coalesced    int
	// pendingTokens counts the callbacks behind pending (and the text the
	// filters still hold back).
	pendingTokens int
	// think splits reasoning from the answer as the model's family writes
	// it; its reasoning waits in pendingReasoning, the answer goes on to
	// the stop strings.
	think            chatfmt.ReasoningSplitter
	pendingReasoning []byte
	// tools parses the answer into tool calls when the request declared
	// tools; nil otherwise.
	tools        chatfmt.CallParser
	pendingCalls []npu.ToolCallDelta
	// doc holds the answer's content to the structured output the request
	// asked for (format.go); nil for none. Set before the stream is shared.
	doc *document
	// clamped is the completion limit the pool lowered the request's to
	// when it admitted it (0: not lowered); set before the stream is shared.
	clamped int
	// ended, when set, runs once the engine is done with the request,
	// before any reader can see the end (the pool's done: the tenant's
	// admission), so a client that sends its next request on the end is
	// not refused for the one that ended; set before the stream is shared.
	ended    func()
	finished bool
	result   npu.Result
	err      error
	// loadStatus, while set, says how the load the request waits for
	// goes; heartbeats carry it.
	loadStatus func() (npu.LoadStatus, bool)
}

func newStream(parent context.Context, req *npu.Request, limits StreamLimits, obs npu.Observer) *Stream {
	ctx, cancel := context.WithCancelCause(parent)
	now := time.Now()
	if obs == nil {
		obs = noObserver{}
	}
	return &Stream{
		req:       req,
		limits:    limits,
		obs:       obs,
		created:   now,
		ctx:       ctx,
		cancel:    cancel,
		notify:    make(chan struct{}, 1),
		stops:     npu.NewStopMatcher(req.Stop),
		think:     chatfmt.SplitReasoning(nil),
		lastEvent: now,
	}
}

// speak makes the stream read its answer as the model family named family
// (ModelDetails.ToolFormat) writes it: its reasoning, and its tool calls
// when the request declared tools. An unknown family keeps the default
// reasoning split and parses no calls.
func (s *Stream) speak(family string) {
	f := chatfmt.Lookup(family)
	s.think = chatfmt.SplitReasoning(f)
	if f != nil && len(s.req.Tools) > 0 {
		tools := make([]chatfmt.Tool, len(s.req.Tools))
		for i, t := range s.req.Tools {
			tools[i] = chatfmt.Tool{Name: t.Name, Parameters: t.Parameters}
		}
		s.tools = f.NewCallParser(chatfmt.ParserOptions{Tools: tools, Single: s.req.SingleToolCall, Document: s.req.Format != nil})
	}
}

// content passes answer text on: through the tool-call parser when there
// is one, to the pending text (held to the request's format) and calls. It
// reports that the answer must end (the one call allowed was made, the
// document is whole or left its format).
func (s *Stream) content(text string) bool {
	if s.tools == nil {
		return s.answer(text)
	}
	out := s.tools.Push(text)
	end := s.answer(out.Content)
	s.appendCalls(out.Calls)
	return s.tools.Finished() || end
}

func (s *Stream) appendText(text string) {
	if text == "" {
		return
	}
	if len(s.pending) > 0 {
		s.coalesced++ // the writer has not taken the previous chunk yet
	}
	s.pending = append(s.pending, text...)
	s.signal()
}

// appendCalls queues pieces of calls, merging a piece into the one before
// it when both belong to the same call, as text is coalesced.
func (s *Stream) appendCalls(calls []chatfmt.CallDelta) {
	for _, d := range calls {
		c := npu.ToolCallDelta(d)
		if n := len(s.pendingCalls); n > 0 && c.ID == "" {
			last := &s.pendingCalls[n-1]
			if last.Index == c.Index && !last.Done {
				last.Arguments += c.Arguments
				last.Done = c.Done
				continue
			}
		}
		s.pendingCalls = append(s.pendingCalls, c)
	}
	if len(calls) > 0 {
		s.signal()
	}
}

// flushToolCalls ends the tool-call parser's answer; cut says a limit
// ended it.
func (s *Stream) flushToolCalls(cut bool) {
	if s.tools == nil {
		return
	}
	out := s.tools.Flush(cut)
	s.answer(out.Content)
	s.appendCalls(out.Calls)
}

// signal wakes the consumer; it never blocks.
func (s *Stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// watchLoad makes heartbeats carry status() while the request waits for
// its model's load; nil ends that.
func (s *Stream) watchLoad(status func() (npu.LoadStatus, bool)) {
	s.mu.Lock()
	s.loadStatus = status
	s.mu.Unlock()
}

// Loading says how the load of the model the request waits for goes;
// false when it waits for no load.
func (s *Stream) Loading() (npu.LoadStatus, bool) {
	s.mu.Lock()
	status := s.loadStatus
	s.mu.Unlock()
	if status == nil {
		return npu.LoadStatus{}, false
	}
	return status() // the lifecycle's lock, never under the stream's
}

// begin marks the moment the engine starts on this request, on device.
func (s *Stream) begin(device string) {
	s.mu.Lock()
	s.device = device
	s.started = time.Now()
	s.lastActivity = s.started
	s.mu.Unlock()
	s.signal() // the consumer re-arms its timers for the running phase
}

// sink is the engine's Sink. It must stay cheap: it runs on the engine's
// thread, between tokens.
func (s *Stream) sink(text string) npu.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.lastActivity = now
	if s.ctx.Err() != nil {
		return npu.Cancel
	}
	if s.stopReason == npu.FinishStop || s.finished {
		return npu.Stop // a stop string ended the output; later text is not part of it
	}
	if s.firstToken.IsZero() && text != "" {
		s.firstToken = now
	}
	if text != "" {
		s.pendingTokens++
	}
	reasoning, content := s.think.Push(s.utf8.Push(text))
	if reasoning != "" {
		if len(s.pending)+len(s.pendingReasoning) > 0 {
			s.coalesced++
		}
		s.pendingReasoning = append(s.pendingReasoning, reasoning...)
		s.signal()
	}
	release, stopped := s.stops.Push(content)
	if s.content(release) {
		stopped = true // the one tool call allowed was made
	}
	if stopped {
		s.stopReason = npu.FinishStop
		s.signal()
		return npu.Stop
	}
	if len(s.pending)+len(s.pendingReasoning) > s.limits.MaxPendingBytes {
		s.cancel(npu.ErrSlowConsumer)
		s.signal()
		return npu.Cancel
	}
	// The deadline is also checked here, not only in Next, so that a writer
	// blocked on a slow client cannot let the engine run past it.
	if s.req.Timeout > 0 && s.stopReason == "" && now.Sub(s.started) >= s.req.Timeout {
		s.stopReason = npu.FinishLength
	}
	if s.stopReason == npu.FinishLength {
		return npu.Stop // the deadline passed
	}
	return npu.Running
}

// finish records the engine's return. Text still held back (an incomplete
// code point, a possible stop-string prefix) is released now.
func (s *Stream) finish(res npu.Result, err error) {
	// The engine is done with the request's images: their memory goes back
	// before a client can see the end and send its next request.
	released(s.req)
	if s.ended != nil {
		s.ended()
	}
	s.mu.Lock()
	defer s.signal()
	defer s.mu.Unlock()
	if cause := context.Cause(s.ctx); cause != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = cause // the bridge cancelled the engine: say why, not just "canceled"
	}
	if err == nil && s.stopReason != npu.FinishStop {
		reasoning, content := s.think.Push(s.utf8.Flush())
		lastReasoning, lastContent := s.think.Flush()
		s.pendingReasoning = append(append(s.pendingReasoning, reasoning...), lastReasoning...)
		release, stopped := s.stops.Push(content + lastContent)
		if s.content(release) {
			stopped = true
		}
		if stopped {
			s.stopReason = npu.FinishStop
		} else {
			s.content(s.stops.Flush())
		}
	}
	if err == nil {
		// Also after a stop string: what it held before it is content.
		s.flushToolCalls(res.FinishReason == npu.FinishLength || s.stopReason == npu.FinishLength)
		s.endDocument(res)
		if s.doc != nil && s.doc.err != nil {
			err = s.doc.err // after the valid prefix, already pending
		}
	}
	if s.stopReason != "" {
		res.FinishReason = s.stopReason
	}
	if res.MaxTokensClamped == 0 {
		res.MaxTokensClamped = s.clamped
	}
	if s.stopReason == npu.FinishStop {
		res.StopSequence = s.stops.Matched() // "" when it was no stop string
	}
	if s.tools != nil && s.tools.Calls() > 0 && res.FinishReason == npu.FinishStop {
		res.FinishReason = npu.FinishToolCalls
	}
	if !s.started.IsZero() {
		res.Timings.Queue = s.started.Sub(s.created) - res.Timings.Load
	}
	// Reported before any reader can see the end, so that metrics that
	// show a finished request show its generation too.
	s.obs.GenerationEnded(npu.GenerationReport{Model: s.req.Model, Device: s.device, Tenant: s.req.Tenant,
		Queue: res.Timings.Queue, Result: res, Err: err})
	s.finished, s.result, s.err = true, res, err
}

// Next returns the next event: text, a heartbeat, or the final result.
// After the text produced so far has been returned, a failure comes back as
// an error; the error of a client that went away (ctx done) wraps
// ErrClientGone. Next must be called from one goroutine at a time.
func (s *Stream) Next(ctx context.Context) (npu.Event, error) {
	for {
		s.mu.Lock()
		now := time.Now()
		if len(s.pending) > 0 || len(s.pendingReasoning) > 0 || len(s.pendingCalls) > 0 {
			ev := npu.Event{Text: string(s.pending), Reasoning: string(s.pendingReasoning), Tokens: s.pendingTokens}
			if len(s.pendingCalls) > 0 {
				ev.ToolCalls = s.pendingCalls
				s.pendingCalls = nil // handed over: the reader owns it now
			}
			s.pending, s.pendingReasoning, s.pendingTokens = s.pending[:0], s.pendingReasoning[:0], 0
			s.lastEvent = now
			prev := s.lastText
			s.lastText = now
			model, device := s.req.Model, s.device
			s.mu.Unlock()
			if !prev.IsZero() {
				s.obs.TokenGap(model, device, now.Sub(prev))
			}
			return ev, nil
		}
		if s.finished {
			res, err := s.result, s.err
			s.mu.Unlock()
			if err != nil {
				return npu.Event{}, err
			}
			return npu.Event{Done: true, Result: res}, nil
		}
		// s.ctx is the stream's own lifetime, read here, not a context
		// this call hands down instead of ctx.
		if err := context.Cause(s.ctx); err != nil { //nolint:contextcheck // see above
			s.mu.Unlock()
			return npu.Event{}, err // abandoned; the engine stops at its next callback
		}
		wake, expired := s.nextWakeLocked(now)
		s.mu.Unlock()

		switch expired {
		case wakeHeartbeat:
			s.mu.Lock()
			s.lastEvent = now
			s.mu.Unlock()
			ev := npu.Event{Heartbeat: true}
			if st, ok := s.Loading(); ok {
				ev.Loading = &st
			}
			return ev, nil
		case wakeTokenTimeout:
			err := fmt.Errorf("no output for %s: %w", s.limits.TokenTimeout, npu.ErrTokenTimeout)
			s.cancel(err)
			return npu.Event{}, err
		case wakeDeadline:
			s.mu.Lock()
			if s.stopReason == "" {
				s.stopReason = npu.FinishLength // the engine gets Stop at its next callback
			}
			s.mu.Unlock()
			continue
		}

		var timerC <-chan time.Time
		if !wake.IsZero() {
			if s.timer == nil {
				s.timer = time.NewTimer(wake.Sub(now))
			} else {
				s.timer.Reset(wake.Sub(now))
			}
			timerC = s.timer.C
		}
		select {
		case <-s.notify:
		case <-timerC:
		case <-s.ctx.Done():
		case <-ctx.Done():
			err := fmt.Errorf("%w: %w", npu.ErrClientGone, context.Cause(ctx))
			s.cancel(err)
			return npu.Event{}, err
		}
	}
}

type wakeKind int

const (
	wakeNone wakeKind = iota
	wakeHeartbeat
	wakeTokenTimeout
	wakeDeadline
)

// nextWakeLocked returns the earliest future moment Next must wake up for,
// or the kind of wake-up that is already due.
func (s *Stream) nextWakeLocked(now time.Time) (time.Time, wakeKind) {
	var earliest time.Time
	consider := func(at time.Time, kind wakeKind) wakeKind {
		if !now.Before(at) {
			return kind
		}
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
		return wakeNone
	}
	if s.limits.Heartbeat > 0 {
		if k := consider(s.lastEvent.Add(s.limits.Heartbeat), wakeHeartbeat); k != wakeNone {
			return time.Time{}, k
		}
	}
	if !s.started.IsZero() {
		if s.limits.TokenTimeout > 0 {
			if k := consider(s.lastActivity.Add(s.limits.TokenTimeout), wakeTokenTimeout); k != wakeNone {
				return time.Time{}, k
			}
		}
		if s.req.Timeout > 0 && s.stopReason == "" {
			if k := consider(s.started.Add(s.req.Timeout), wakeDeadline); k != wakeNone {
				return time.Time{}, k
			}
		}
	}
	return earliest, wakeNone
}

// MaxTokensClamped is the completion limit the request's was lowered to
// when it was admitted (see CompletionLimit), 0 when it was not: known
// before the first event, so a writer can say it in a header. An engine
// that can only tell at its end reports it in Result.MaxTokensClamped.
func (s *Stream) MaxTokensClamped() int { return s.clamped }

// FirstTokenAt is when the engine produced its first non-empty text, or zero.
func (s *Stream) FirstTokenAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstToken
}

// Stats describes the stream so far.
func (s *Stream) Stats() npu.StreamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := npu.StreamStats{Model: s.req.Model, Device: s.device, Coalesced: s.coalesced, Finished: s.finished, MaxTokensClamped: s.clamped}
	if s.tools != nil {
		st.ToolCallProblems = s.tools.Problems()
	}
	if !s.started.IsZero() {
		st.Queue = s.started.Sub(s.created)
	}
	if s.finished {
		st.Result, st.Err = s.result, s.err
		st.Queue = s.result.Timings.Queue
		st.MaxTokensClamped = max(st.MaxTokensClamped, s.result.MaxTokensClamped)
	} else {
		st.Err = context.Cause(s.ctx)
	}
	return st
}

// Close abandons the stream if it has not finished. Always call it: it is
// how a writer that stops reading frees the engine. Call it from the
// goroutine that calls Next.
func (s *Stream) Close() {
	s.Abandon(npu.ErrClientGone)
	if s.timer != nil {
		s.timer.Stop()
	}
}

// Abandon ends the stream with cause (if it has not finished); the engine
// gets Cancel at its next callback. Any goroutine may call it.
func (s *Stream) Abandon(cause error) { s.cancel(cause) }
