package serve

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// granted reports whether t holds its slot without waiting for it.
func granted(t *Ticket) bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}

func mustEnqueue(t *testing.T, s *Scheduler) *Ticket {
	t.Helper()
	tk, err := s.Enqueue()
	require.NoError(t, err)
	return tk
}

func TestSchedulerGrantsAFreeSlotAtOnce(t *testing.T) {
	s := NewScheduler(1, 4)
	tk := mustEnqueue(t, s)
	assert.True(t, granted(tk))
	assert.Equal(t, 1, s.Running())
	assert.Zero(t, s.Waiting())
	require.NoError(t, tk.Wait(context.Background(), time.Minute)) // granted already: a short timer could win select's random pick
	tk.Release()
	assert.Zero(t, s.Running())
}

func TestSchedulerGrantsInFIFOOrder(t *testing.T) {
	s := NewScheduler(1, 8)
	first := mustEnqueue(t, s)
	tickets := make([]*Ticket, 6)
	for i := range tickets {
		tickets[i] = mustEnqueue(t, s)
	}
	assert.Equal(t, len(tickets), s.Waiting())

	// Waiters block in reverse order of arrival, so any order other than
	// the queue's would show.
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := len(tickets) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tickets[i].Wait(context.Background(), 0); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			tickets[i].Release()
		}()
	}
	first.Release()
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
	assert.Zero(t, s.Running())
	assert.Zero(t, s.Waiting())
}

func TestSchedulerReleaseHandsTheSlotToTheOldestWaiter(t *testing.T) {
	s := NewScheduler(1, 4)
	a := mustEnqueue(t, s)
	b := mustEnqueue(t, s)
	c := mustEnqueue(t, s)
	a.Release()
	assert.True(t, granted(b))
	assert.False(t, granted(c))
	assert.Equal(t, 1, s.Running())
	assert.Equal(t, 1, s.Waiting())

	a.Release() // a second release of the same ticket must not free b's slot
	assert.False(t, granted(c), "a double release gave out a second slot")
	assert.Equal(t, 1, s.Running())

	b.Release()
	assert.True(t, granted(c))
	c.Release()
	assert.Zero(t, s.Running())
}

func TestSchedulerQueueFull(t *testing.T) {
	for _, depth := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			s := NewScheduler(1, depth)
			mustEnqueue(t, s) // holds the slot
			for range depth {
				mustEnqueue(t, s)
			}
			assert.Equal(t, depth, s.Waiting())
			_, err := s.Enqueue()
			require.ErrorIs(t, err, npu.ErrQueueFull, "depth %d", depth)
			assert.Equal(t, depth, s.Waiting(), "a refused request takes no place")
		})
	}
}

func TestSchedulerSeveralSlots(t *testing.T) {
	s := NewScheduler(2, 1)
	a := mustEnqueue(t, s)
	b := mustEnqueue(t, s)
	assert.True(t, granted(a) && granted(b), "two slots, two grants")
	c := mustEnqueue(t, s)
	assert.False(t, granted(c))
	_, err := s.Enqueue()
	require.ErrorIs(t, err, npu.ErrQueueFull)
	b.Release()
	assert.True(t, granted(c))
	assert.Equal(t, 2, s.Running())
}

func TestTicketWaitCancelledLeavesTheQueueAtOnce(t *testing.T) {
	s := NewScheduler(1, 4)
	running := mustEnqueue(t, s)
	leaving := mustEnqueue(t, s)
	next := mustEnqueue(t, s)

	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("client left")
	cancel(cause)
	err := leaving.Wait(ctx, 0)
	require.ErrorIs(t, err, cause, "Wait returns the context's cause")
	assert.Equal(t, 1, s.Waiting(), "the cancelled ticket left the queue before Wait returned")

	running.Release()
	assert.True(t, granted(next), "the slot went to the next waiter, not the one that left")
	assert.False(t, granted(leaving))
	require.NoError(t, next.Wait(context.Background(), time.Second))
	next.Release()
	assert.Zero(t, s.Running())
	assert.Zero(t, s.Waiting())
}

func TestTicketWaitUnblocksWhenCancelled(t *testing.T) {
	s := NewScheduler(1, 4)
	running := mustEnqueue(t, s)
	defer running.Release()
	waiter := mustEnqueue(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- waiter.Wait(ctx, 0) }()
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return when its context ended")
	}
	assert.Zero(t, s.Waiting())
}

func TestTicketWaitMaxWait(t *testing.T) { synctest.Test(t, testTicketWaitMaxWait) }

func testTicketWaitMaxWait(t *testing.T) {
	s := NewScheduler(1, 4)
	running := mustEnqueue(t, s)
	waiter := mustEnqueue(t, s)
	start := time.Now()
	err := waiter.Wait(context.Background(), 10*time.Millisecond)
	require.ErrorIs(t, err, npu.ErrQueueTimeout)
	assert.Equal(t, 10*time.Millisecond, time.Since(start), "the max wait exactly, on the bubble's clock")
	assert.Zero(t, s.Waiting(), "a timed-out ticket left the queue")
	running.Release()
	assert.Zero(t, s.Running(), "nobody was left to take the slot")
}

// TestTicketWaitPrefersCancellationToAGrant grants a slot to a ticket
// whose context has already ended: Wait must return the cause and hand the
// slot on, every time (a select would take the grant half the time, and
// an aborted request queued behind a generation reached the engine).
func TestTicketWaitPrefersCancellationToAGrant(t *testing.T) {
	cancelled, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	cancel(cause)
	for i := range 64 {
		s := NewScheduler(1, 4)
		a := mustEnqueue(t, s)
		b := mustEnqueue(t, s)
		c := mustEnqueue(t, s)
		a.Release() // b is granted, and its context is already done
		require.True(t, granted(b))
		require.ErrorIs(t, b.Wait(cancelled, 0), cause, "iteration %d: Wait took a slot granted after its context ended", i)
		require.True(t, granted(c), "iteration %d: the slot was handed on", i)
		assert.Equal(t, 1, s.Running())
		assert.Zero(t, s.Waiting())
		c.Release()
		assert.Zero(t, s.Running())
	}
}

// TestSchedulerLosesNoSlot races many cancellations, timeouts and releases
// against grants, and checks the slot is never held twice nor lost.
func TestSchedulerLosesNoSlot(t *testing.T) { synctest.Test(t, testSchedulerLosesNoSlot) }

func testSchedulerLosesNoSlot(t *testing.T) {
	const slots = 2
	s := NewScheduler(slots, 1000)
	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := s.Enqueue()
			if err != nil {
				t.Error(err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(400))*time.Microsecond)
			defer cancel()
			maxWait := time.Duration(0)
			if i%4 == 0 {
				maxWait = time.Duration(rand.IntN(400)) * time.Microsecond
			}
			if err := tk.Wait(ctx, maxWait); err != nil {
				return
			}
			n := holders.Add(1)
			for {
				m := maxHolders.Load()
				if n <= m || maxHolders.CompareAndSwap(m, n) {
					break
				}
			}
			if i%3 == 0 {
				time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			}
			holders.Add(-1)
			tk.Release()
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHolders.Load(), int32(slots), "more holders than slots")
	assert.Zero(t, s.Running())
	assert.Zero(t, s.Waiting())
	for range slots {
		assert.True(t, granted(mustEnqueue(t, s)), "every slot is still there")
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name        string
		slots       int
		meanService time.Duration
		waiting     int
		want        time.Duration
	}{
		{"no history", 1, 0, 0, time.Second},
		{"short service is at least one second", 1, 50 * time.Millisecond, 3, time.Second},
		{"rounded up to whole seconds", 1, 1500 * time.Millisecond, 0, 2 * time.Second},
		{"the queue ahead drains first", 1, 2 * time.Second, 2, 6 * time.Second},
		{"slots share the queue", 2, 2 * time.Second, 3, 4 * time.Second},
		{"never more than a minute", 1, 10 * time.Second, 20, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(tc.slots, 64)
			for range tc.slots + tc.waiting {
				mustEnqueue(t, s)
			}
			require.Equal(t, tc.waiting, s.Waiting())
			s.mu.Lock()
			s.meanService = tc.meanService
			s.mu.Unlock()
			assert.Equal(t, tc.want, s.RetryAfter())
		})
	}
}

func TestRetryAfterLearnsFromService(t *testing.T) { synctest.Test(t, testRetryAfterLearnsFromService) }

func testRetryAfterLearnsFromService(t *testing.T) {
	s := NewScheduler(1, 64)
	tk := mustEnqueue(t, s)
	time.Sleep(5 * time.Millisecond)
	tk.Release()
	s.mu.Lock()
	mean := s.meanService
	s.mu.Unlock()
	assert.GreaterOrEqual(t, mean, 5*time.Millisecond, "the held time was recorded")
	assert.Equal(t, time.Second, s.RetryAfter(), "a few milliseconds still clamp to one second")
}

func conv(turns ...string) []npu.Message {
	var out []npu.Message
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out = append(out, npu.Message{Role: role, Content: t})
	}
	return out
}

// Issue 18: among the waiters, one that continues its model's cached
// conversation goes first; one that does not is passed over at most
// MaxOvertakes times.
func TestAffinityPrefersAContinuationWithinTheFairnessBound(t *testing.T) {
	synctest.Test(t, testAffinityPrefersAContinuationWithinTheFairnessBound)
}

func testAffinityPrefersAContinuationWithinTheFairnessBound(t *testing.T) {
	s := NewAffinityScheduler(1, 16, Affinity{MaxOvertakes: 2, MaxWait: time.Hour})
	run, err := s.EnqueueConversation("m", conv("a1"))
	require.NoError(t, err)
	require.True(t, granted(run))
	assert.Equal(t, npu.CacheNew, run.CacheHint)

	other, err := s.EnqueueConversation("m", conv("b1"))
	require.NoError(t, err)
	history := conv("a1")
	for turn := 2; turn <= 5; turn++ {
		history = append(history, npu.Message{Role: "assistant", Content: "answer"}, npu.Message{Role: "user", Content: "more"})
		next, err := s.EnqueueConversation("m", slices.Clone(history))
		require.NoError(t, err)
		run.Release()
		switch {
		case turn <= 3: // other may be passed over twice
			require.True(t, granted(next), "turn %d continues the cache: it goes first", turn)
			assert.Equal(t, npu.CacheContinued, next.CacheHint)
			assert.False(t, granted(other))
			run = next
		default:
			require.True(t, granted(other), "passed over twice: its turn now, whatever continues")
			assert.Equal(t, npu.CacheSwitched, other.CacheHint)
			assert.Equal(t, 2, other.passed)
			other.Release()
			require.True(t, granted(next), "then the conversation, from the start: its cache was reset")
			assert.Equal(t, npu.CacheSwitched, next.CacheHint)
			next.Release()
			return
		}
	}
}

// Issue 18: after waiting MaxWait a request is never passed over.
func TestAffinityNeverPassesOverALongWaiter(t *testing.T) {
	synctest.Test(t, testAffinityNeverPassesOverALongWaiter)
}

func testAffinityNeverPassesOverALongWaiter(t *testing.T) {
	s := NewAffinityScheduler(1, 16, Affinity{MaxOvertakes: 100, MaxWait: 20 * time.Millisecond})
	run, err := s.EnqueueConversation("m", conv("a1"))
	require.NoError(t, err)
	other, err := s.EnqueueConversation("m", conv("b1"))
	require.NoError(t, err)
	time.Sleep(30 * time.Millisecond)
	next, err := s.EnqueueConversation("m", conv("a1", "answer", "more"))
	require.NoError(t, err)
	run.Release()
	require.True(t, granted(other), "it waited longer than MaxWait")
	assert.False(t, granted(next))
	other.Release()
	require.True(t, granted(next))
	next.Release()
}

// Plain FIFO when affinity is off.
func TestAffinityOffIsFIFO(t *testing.T) { synctest.Test(t, testAffinityOffIsFIFO) }

func testAffinityOffIsFIFO(t *testing.T) {
	s := NewScheduler(1, 16)
	run, err := s.EnqueueConversation("m", conv("a1"))
	require.NoError(t, err)
	other, err := s.EnqueueConversation("m", conv("b1"))
	require.NoError(t, err)
	next, err := s.EnqueueConversation("m", conv("a1", "answer", "more"))
	require.NoError(t, err)
	run.Release()
	require.True(t, granted(other))
	assert.False(t, granted(next))
	other.Release()
	next.Release()
}

// Issue 18: with Linger, a freed slot waits a moment for the next turn of
// a conversation whose client answered at once last time (an agent),
// instead of handing its cache to another conversation of the model;
// another model's request does not wait; a person's conversation (slower
// than Linger) is never waited for; the linger ends in time.
func TestAffinityLingerKeepsTheCacheForAQuickConversation(t *testing.T) {
	synctest.Test(t, testAffinityLingerKeepsTheCacheForAQuickConversation)
}

func testAffinityLingerKeepsTheCacheForAQuickConversation(t *testing.T) {
	s := NewAffinityScheduler(1, 16, Affinity{MaxOvertakes: 4, MaxWait: time.Hour, Linger: 200 * time.Millisecond})
	run, err := s.EnqueueConversation("m", conv("a1"))
	require.NoError(t, err)
	run.Release()
	next, err := s.EnqueueConversation("m", conv("a1", "answer", "more")) // at once: an agent
	require.NoError(t, err)
	require.True(t, granted(next))
	next.Release() // the slot lingers for its next turn

	other, err := s.EnqueueConversation("m", conv("b1"))
	require.NoError(t, err)
	assert.False(t, granted(other), "it would reset the cache the slot keeps")
	elsewhere, err := s.EnqueueConversation("n", conv("c1"))
	require.NoError(t, err)
	require.True(t, granted(elsewhere), "another model's pipeline has its own cache")
	elsewhere.Release()
	assert.False(t, granted(other))

	third, err := s.EnqueueConversation("m", conv("a1", "answer", "more", "answer", "again"))
	require.NoError(t, err)
	require.True(t, granted(third), "the turn the slot waited for")
	assert.Equal(t, npu.CacheContinued, third.CacheHint)
	third.Release() // lingers again: it was quick
	require.NoError(t, other.Wait(t.Context(), time.Second), "the linger ends and the waiter goes")
	other.Release()
}

func TestAffinityNeverLingersForAPersonsConversation(t *testing.T) {
	synctest.Test(t, testAffinityNeverLingersForAPersonsConversation)
}

func testAffinityNeverLingersForAPersonsConversation(t *testing.T) {
	s := NewAffinityScheduler(1, 16, Affinity{MaxOvertakes: 4, MaxWait: time.Hour, Linger: 20 * time.Millisecond})
	run, err := s.EnqueueConversation("m", conv("a1"))
	require.NoError(t, err)
	run.Release()
	time.Sleep(40 * time.Millisecond) // reading, thinking, typing
	next, err := s.EnqueueConversation("m", conv("a1", "answer", "more"))
	require.NoError(t, err)
	require.True(t, granted(next))
	assert.Equal(t, npu.CacheContinued, next.CacheHint, "still a continuation: nothing else ran")
	next.Release()
	other, err := s.EnqueueConversation("m", conv("b1"))
	require.NoError(t, err)
	assert.True(t, granted(other), "no linger for a slow client: nobody waits for it")
	other.Release()
}
