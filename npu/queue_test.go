package npu

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSchedulerGrantsInFIFOOrder(t *testing.T) {
	s := NewScheduler(1, 8)
	first, err := s.Enqueue()
	require.NoError(t, err)
	require.NoError(t, first.Wait(context.Background(), 0), "a free slot is granted at once")

	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	tickets := make([]*Ticket, 5)
	for i := range tickets {
		tickets[i], err = s.Enqueue()
		require.NoError(t, err)
	}
	assert.Equal(t, 5, s.Waiting())
	for i, tk := range tickets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, tk.Wait(context.Background(), 0))
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			tk.Release()
		}()
	}
	first.Release()
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
	assert.Zero(t, s.Running())
	assert.Zero(t, s.Waiting())
}

func TestSchedulerQueueFull(t *testing.T) {
	s := NewScheduler(1, 2)
	running, err := s.Enqueue()
	require.NoError(t, err)
	for range 2 {
		_, err := s.Enqueue()
		require.NoError(t, err)
	}
	_, err = s.Enqueue()
	require.ErrorIs(t, err, ErrQueueFull)
	assert.True(t, Retryable(err))
	_ = running

	none := NewScheduler(1, 0)
	_, err = none.Enqueue()
	require.NoError(t, err, "the slot itself is free")
	_, err = none.Enqueue()
	require.ErrorIs(t, err, ErrQueueFull, "with depth 0 nobody waits")
}

func TestTicketLeavesQueueOnCancelAndTimeout(t *testing.T) {
	s := NewScheduler(1, 4)
	running, _ := s.Enqueue()
	leaving, _ := s.Enqueue()
	next, _ := s.Enqueue()

	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("client left")
	cancel(cause)
	err := leaving.Wait(ctx, 0)
	require.ErrorIs(t, err, cause)
	assert.Equal(t, 1, s.Waiting(), "the cancelled ticket left the queue at once")

	err = next.Wait(context.Background(), 10*time.Millisecond)
	require.ErrorIs(t, err, ErrQueueTimeout)
	assert.Zero(t, s.Waiting())

	running.Release()
	assert.Zero(t, s.Running(), "nobody was left to take the slot")
}

// TestSchedulerLosesNoSlot races cancellations against grants.
func TestSchedulerLosesNoSlot(t *testing.T) {
	s := NewScheduler(1, 1000)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := s.Enqueue()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
			defer cancel()
			if err := tk.Wait(ctx, 0); err == nil {
				if i%3 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				tk.Release()
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, s.Running())
	assert.Zero(t, s.Waiting())
	tk, err := s.Enqueue()
	require.NoError(t, err)
	require.NoError(t, tk.Wait(context.Background(), time.Second), "the slot is still there")
}

func TestRetryAfterIsClamped(t *testing.T) {
	s := NewScheduler(1, 64)
	assert.Equal(t, time.Second, s.RetryAfter(), "no history: one second")
	s.meanService = 10 * time.Second
	for range 20 {
		_, _ = s.Enqueue()
	}
	assert.Equal(t, 60*time.Second, s.RetryAfter(), "never more than clients honour")
}
