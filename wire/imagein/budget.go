package imagein

import (
	"fmt"
	"sync"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/membudget"
)

// ErrBusy is returned when decoding an image would take the daemon past
// its budget of decoded image memory (--max-image-memory): a server-side
// refusal the client may retry (503 with Retry-After, as a full queue).
var ErrBusy = fmt.Errorf("images: the memory for decoded images is in use by other requests, retry later: %w", npu.ErrQueueFull)

// Budget bounds the decoded image bytes the daemon holds at once, across
// requests: the pictures waiting in the queue or in a generation, and the
// decoder's buffers while a decode runs. One Budget is shared by every
// API; a request takes its share through a Batch and gives it back when
// its generation ends.
type Budget = membudget.Budget

// NewBudget returns a budget of total bytes (0 or less: no total bound).
func NewBudget(total int64) *Budget { return membudget.New(total) }

// Batch is one request's images: what they hold of the budget, and the
// request's own bound (Limits.MaxDecodedBytes). Release gives it all back.
type Batch struct {
	limits Limits
	budget *Budget
	// sizeOnly: the batch reads each image's header for its size and
	// decodes nothing (Limits.Measure).
	sizeOnly bool

	mu       sync.Mutex
	held     int64
	released bool
}

// Begin starts decoding one request's images.
func (l Limits) Begin() *Batch {
	budget := l.Budget
	if budget == nil {
		budget = NewBudget(0)
	}
	return &Batch{limits: l, budget: budget}
}

// Measure starts reading one request's images for their sizes only (a
// token count): each is checked as Decode checks it (file size, format,
// pixels) and comes back with its width and height and no pixels; nothing
// is decoded and nothing is reserved, so there is nothing to give back.
func (l Limits) Measure() *Batch {
	bt := l.Begin()
	bt.sizeOnly = true
	return bt
}

// Held is what the request's decoded images hold of the budget now.
func (bt *Batch) Held() int64 {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return bt.held
}

// Release gives the request's share back. It may be called more than
// once (the pool calls it when the generation ends, the API when the
// request never reached the router).
func (bt *Batch) Release() {
	bt.mu.Lock()
	n := bt.held
	bt.held, bt.released = 0, true
	bt.mu.Unlock()
	if n > 0 {
		bt.budget.Give(n, false)
	}
}

// take reserves n more bytes for the request: a refusal of the request
// (ErrInvalid) past its own bound, ErrBusy past the daemon's.
func (bt *Batch) take(n int64) error {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.released {
		return invalid("the request ended")
	}
	if max := bt.limits.MaxDecodedBytes; max > 0 && bt.held+n > max {
		return invalid("the images of this request would decode to more than %d bytes (--max-request-image-memory)", max)
	}
	if !bt.budget.Reserve(n) {
		return ErrBusy
	}
	bt.held += n
	return nil
}

// drop gives back n bytes of decoder buffers after a decode.
func (bt *Batch) drop(n int64) {
	bt.mu.Lock()
	if bt.released {
		bt.mu.Unlock()
		return
	}
	bt.held -= n
	bt.mu.Unlock()
	bt.budget.Give(n, true)
}
