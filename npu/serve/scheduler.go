package serve

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/npud/npud/npu"
)

// Scheduler hands out an engine's generation slots. An OpenVINO pipeline
// is not safe for concurrent generate, so an engine has one slot; waiters
// queue up to a maximum depth.
//
// The order is FIFO, with one exception that pays on the NPU. There GenAI
// prefills the whole history every turn (pipeline_stateful.cpp,
// m_use_full_chat_history), and what is reused is NPUW's prefix cache:
// content-keyed blocks of 256 tokens, at most 128, least recently used
// evicted first (openvino src/plugins/intel_npu/src/plugin/npuw/
// llm_prefix_caching.cpp). The conversation that ran last is the one whose
// blocks are surely still there; when agents' histories together exceed
// the 128 blocks, FIFO interleaving evicts each conversation's blocks
// before its next turn. So among the waiters, one that continues the
// conversation its model ran last goes first, and after a turn the slot
// may wait a little (Affinity.Linger) for the same conversation's next
// turn, for clients that answered at once last time (agents). Measured on
// the test library's NPU model with prefix caching (8 agents growing 2k to
// 8k tokens, docs/PERFORMANCE.md): linger cut the later turns' TTFT p50
// from 100 s to 7 s and the run from 718 s to 420 s; the preference
// without linger changed nothing measurable there (an agent's next turn
// is not queued yet when the slot frees), and linger needs it. Fairness
// bounds both: no request is passed over more than Affinity.MaxOvertakes
// times, or once it has waited Affinity.MaxWait.
type Scheduler struct {
	slots    int
	maxDepth int
	affinity Affinity

	mu          sync.Mutex
	inUse       int
	waiting     list.List // of *Ticket, oldest first
	meanService time.Duration
	held        map[string][]npu.Message // per model: the conversation its cache holds; bounded by the models served
	released    map[string]turnEnd       // per model: its last conversation turn to end
	linger      *lingering               // the slot kept free for a conversation's next turn
}

// Affinity bounds the preference for requests that continue the
// conversation their model ran last; a zero MaxOvertakes means plain FIFO.
type Affinity struct {
	MaxOvertakes int           // times a request may be passed over
	MaxWait      time.Duration // after waiting this long a request is never passed over; 0 = no time bound
	// Linger is how long a freed slot waits for the same conversation's
	// next turn, for conversations whose client answered within Linger
	// last time (an agent, not a person typing); 0 = never.
	Linger time.Duration
}

// turnEnd is a conversation turn that ended, and when.
type turnEnd struct {
	msgs []npu.Message
	at   time.Time
}

// lingering is a slot kept free for model's conversation.
type lingering struct {
	model string
	timer *time.Timer
}

// NewScheduler returns a FIFO scheduler with the given number of slots and
// maximum queue depth (waiters beyond the running ones).
func NewScheduler(slots, maxDepth int) *Scheduler {
	return NewAffinityScheduler(slots, maxDepth, Affinity{})
}

// NewAffinityScheduler is NewScheduler with conversation affinity.
func NewAffinityScheduler(slots, maxDepth int, a Affinity) *Scheduler {
	return &Scheduler{slots: max(slots, 1), maxDepth: max(maxDepth, 0), affinity: a,
		held: map[string][]npu.Message{}, released: map[string]turnEnd{}}
}

// Ticket is one request's place in the queue.
type Ticket struct {
	s       *Scheduler
	ready   chan struct{} // closed when the slot is granted
	elem    *list.Element
	granted bool // guarded by s.mu
	since   time.Time
	// The conversation the request carries (model and messages; none for
	// a plain prompt), and what happened to it, guarded by s.mu.
	model     string
	msgs      []npu.Message
	queued    time.Time
	passed    int             // times passed over
	quick     bool            // it continued its conversation within Linger of the previous turn's end
	CacheHint npu.CacheResult // set when granted
}

// Enqueue takes a place in the queue, or a slot at once when one is free and
// nobody waits. It fails with ErrQueueFull when the queue is at its depth.
func (s *Scheduler) Enqueue() (*Ticket, error) { return s.EnqueueConversation("", nil) }

// EnqueueConversation is Enqueue for a request carrying conversation msgs
// for model, which the affinity may let go first.
func (s *Scheduler) EnqueueConversation(model string, msgs []npu.Message) (*Ticket, error) {
	t := &Ticket{s: s, ready: make(chan struct{}), model: model, msgs: msgs, queued: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.released[model]; ok && s.affinity.Linger > 0 && extends(last.msgs, msgs) && t.queued.Sub(last.at) <= s.affinity.Linger {
		t.quick = true // its client answered at once: worth lingering for its next turn
	}
	t.elem = s.waiting.PushBack(t)
	s.dispatchLocked()
	if !t.granted && s.waiting.Len() > s.maxDepth {
		s.waiting.Remove(t.elem)
		return nil, fmt.Errorf("%d requests waiting: %w", s.waiting.Len(), npu.ErrQueueFull)
	}
	return t, nil
}

// continuesLocked: t's conversation extends the one its model's cache
// holds.
func (s *Scheduler) continuesLocked(t *Ticket) bool {
	held, ok := s.held[t.model]
	return ok && extends(held, t.msgs)
}

// extends is GenAI's rule for a conversation that continues another: more
// messages, every earlier one equal.
func extends(held, msgs []npu.Message) bool {
	return len(held) > 0 && len(msgs) > len(held) && slices.EqualFunc(held, msgs[:len(held)], npu.Message.Equal)
}

func (s *Scheduler) grantLocked(t *Ticket) {
	s.inUse++
	t.granted = true
	t.since = time.Now()
	if t.msgs != nil {
		held, ok := s.held[t.model]
		switch {
		case s.continuesLocked(t):
			t.CacheHint = npu.CacheContinued
		case !ok || held == nil:
			t.CacheHint = npu.CacheNew
		default:
			t.CacheHint = npu.CacheSwitched
		}
		s.held[t.model] = t.msgs // what the cache holds once this runs
	} else if t.model != "" {
		s.held[t.model] = nil // a plain prompt resets the cache too
	}
	close(t.ready)
}

// exhaustedLocked: t may no longer be passed over.
func (s *Scheduler) exhaustedLocked(t *Ticket, now time.Time) bool {
	a := s.affinity
	return a.MaxOvertakes <= 0 || t.passed >= a.MaxOvertakes || (a.MaxWait > 0 && now.Sub(t.queued) >= a.MaxWait)
}

// dispatchLocked hands free slots to waiters: a waiter that continues the
// conversation its model ran last first, unless one ahead of it may not be
// passed over; otherwise the oldest, unless it is another conversation of
// the model the slot lingers for.
func (s *Scheduler) dispatchLocked() {
	for s.inUse < s.slots && s.waiting.Len() > 0 {
		now := time.Now()
		var pick *list.Element
		for e := s.waiting.Front(); e != nil; e = e.Next() {
			t := e.Value.(*Ticket)
			if s.continuesLocked(t) || s.exhaustedLocked(t, now) {
				pick = e
				break
			}
		}
		if pick == nil {
			// Nothing continues a cache and everyone may still wait: the
			// oldest goes, unless the slot lingers for its model's
			// conversation; then the oldest of another model does.
			for e := s.waiting.Front(); e != nil; e = e.Next() {
				if s.linger == nil || e.Value.(*Ticket).model != s.linger.model {
					pick = e
					break
				}
			}
			if pick == nil {
				return // the linger timer dispatches
			}
		}
		for e := s.waiting.Front(); e != pick; e = e.Next() {
			e.Value.(*Ticket).passed++
		}
		t := s.waiting.Remove(pick).(*Ticket)
		if s.linger != nil && t.model == s.linger.model {
			s.endLingerLocked()
		}
		s.grantLocked(t)
	}
}

// Wait blocks until the ticket holds a slot, ctx ends (the cause is
// returned), or maxWait (when positive) passes (ErrQueueTimeout). On error
// the ticket has left the queue and holds nothing. A context that has
// ended wins over a grant made meanwhile: a request aborted or abandoned
// while it queued never reaches the engine (select would pick either).
func (t *Ticket) Wait(ctx context.Context, maxWait time.Duration) error {
	var timeout <-chan time.Time
	if maxWait > 0 {
		timer := time.NewTimer(maxWait)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-t.ready:
		if ctx.Err() != nil {
			t.abandon() // hands the slot on
			return context.Cause(ctx)
		}
		return nil
	case <-ctx.Done():
		t.abandon()
		return context.Cause(ctx)
	case <-timeout:
		t.abandon()
		return fmt.Errorf("waited %s: %w", maxWait, npu.ErrQueueTimeout)
	}
}

// abandon leaves the queue; a slot granted in the meantime is handed on.
func (t *Ticket) abandon() {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.granted {
		s.releaseLocked(t)
		return
	}
	s.waiting.Remove(t.elem)
}

// Release frees the slot for the next waiter.
func (t *Ticket) Release() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.releaseLocked(t)
}

func (s *Scheduler) releaseLocked(t *Ticket) {
	if !t.granted {
		return
	}
	t.granted = false
	s.inUse--
	held := time.Since(t.since)
	if s.meanService == 0 {
		s.meanService = held
	} else {
		s.meanService = (s.meanService*7 + held) / 8 // EWMA, for Retry-After
	}
	if t.msgs != nil {
		s.released[t.model] = turnEnd{msgs: t.msgs, at: time.Now()}
	}
	if t.quick && s.affinity.Linger > 0 && s.affinity.MaxOvertakes > 0 && s.linger == nil {
		// The next turn of this conversation comes once its client has
		// read the answer, and this client answered at once last time:
		// keep the cache for it a moment.
		model := t.model
		l := &lingering{model: model}
		l.timer = time.AfterFunc(s.affinity.Linger, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.linger == l {
				s.linger = nil
				s.dispatchLocked()
			}
		})
		s.linger = l
	}
	s.dispatchLocked()
}

func (s *Scheduler) endLingerLocked() {
	if s.linger != nil {
		s.linger.timer.Stop()
		s.linger = nil
	}
}

// Forget drops what the scheduler knows of model's cache (it was
// unloaded: a new pipeline starts empty).
func (s *Scheduler) Forget(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, model)
	delete(s.released, model)
}

// Waiting is the number of requests in the queue.
func (s *Scheduler) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting.Len()
}

// Running is the number of slots in use.
func (s *Scheduler) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}

// EstimatedWait is how long a request queued now would wait for a slot:
// none while a slot is free and nobody waits, else the queue ahead of it
// times the mean service time (0 while no generation has finished yet,
// when nothing is known).
func (s *Scheduler) EstimatedWait() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse < s.slots && s.waiting.Len() == 0 {
		return 0
	}
	return s.meanService * time.Duration(s.waiting.Len()+1) / time.Duration(s.slots)
}

// Full reports whether a request queued now would be refused (the queue
// is at its depth).
func (s *Scheduler) Full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse >= s.slots && s.waiting.Len() >= s.maxDepth
}

// RetryAfter estimates when a refused request could be admitted: the time
// for the queue ahead of it to drain, from the recent mean service time,
// clamped to [1 s, 60 s] (clients honour at most 60 s).
func (s *Scheduler) RetryAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	est := s.meanService * time.Duration(s.waiting.Len()+1) / time.Duration(s.slots)
	secs := math.Ceil(est.Seconds())
	return time.Duration(min(max(secs, 1), 60)) * time.Second
}
