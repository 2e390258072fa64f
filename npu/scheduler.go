package npu

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Scheduler hands out an engine's generation slots in FIFO order. An
// OpenVINO pipeline is not safe for concurrent generate, so an engine has
// one slot; waiters queue up to a maximum depth.
type Scheduler struct {
	slots    int
	maxDepth int

	mu          sync.Mutex
	inUse       int
	waiting     list.List // of *Ticket, oldest first
	meanService time.Duration
}

// NewScheduler returns a scheduler with the given number of slots and
// maximum queue depth (waiters beyond the running ones).
func NewScheduler(slots, maxDepth int) *Scheduler {
	return &Scheduler{slots: max(slots, 1), maxDepth: max(maxDepth, 0)}
}

// Ticket is one request's place in the queue.
type Ticket struct {
	s       *Scheduler
	ready   chan struct{} // closed when the slot is granted
	elem    *list.Element
	granted bool // guarded by s.mu
	since   time.Time
}

// Enqueue takes a place in the queue, or a slot at once when one is free and
// nobody waits. It fails with ErrQueueFull when the queue is at its depth.
func (s *Scheduler) Enqueue() (*Ticket, error) {
	t := &Ticket{s: s, ready: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.inUse < s.slots && s.waiting.Len() == 0:
		s.grantLocked(t)
	case s.waiting.Len() >= s.maxDepth:
		return nil, fmt.Errorf("%d requests waiting: %w", s.waiting.Len(), ErrQueueFull)
	default:
		t.elem = s.waiting.PushBack(t)
	}
	return t, nil
}

func (s *Scheduler) grantLocked(t *Ticket) {
	s.inUse++
	t.granted = true
	t.since = time.Now()
	close(t.ready)
}

// Wait blocks until the ticket holds a slot, ctx ends (the cause is
// returned), or maxWait (when positive) passes (ErrQueueTimeout). On error
// the ticket has left the queue and holds nothing.
func (t *Ticket) Wait(ctx context.Context, maxWait time.Duration) error {
	var timeout <-chan time.Time
	if maxWait > 0 {
		timer := time.NewTimer(maxWait)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		t.abandon()
		return context.Cause(ctx)
	case <-timeout:
		t.abandon()
		return fmt.Errorf("waited %s: %w", maxWait, ErrQueueTimeout)
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
	if front := s.waiting.Front(); front != nil {
		next := s.waiting.Remove(front).(*Ticket)
		s.grantLocked(next)
	}
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
