// Package membudget bounds the memory that decoded client inputs hold at
// once across requests: the pictures of wire/imagein (--max-image-memory)
// and the audio clips of wire/audioin (--max-audio-memory). A request
// reserves bytes before it allocates them and gives them back when it is
// done; a reservation past the total is refused, and the caller answers
// that as a busy server (503 with Retry-After), never by decoding anyway.
package membudget

import "sync"

// Budget is one bound, shared by every request that decodes one kind of
// input. The zero total means no bound: reservations are only counted.
type Budget struct {
	total int64
	// ReturnMemory, when set, is called (on its own goroutine, one at a
	// time) after a decode that freed at least ReturnAfter bytes of
	// decoder buffers, so that the memory goes back to the system instead
	// of staying in the heap (debug.FreeOSMemory in the daemon).
	ReturnMemory func()
	ReturnAfter  int64

	mu        sync.Mutex
	used      int64
	returning bool
}

// New returns a budget of total bytes (0 or less: no total bound).
func New(total int64) *Budget { return &Budget{total: total, ReturnAfter: 64 << 20} }

// InUse is how many bytes are reserved now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Reserve takes n bytes, or reports false (and takes nothing) when that
// would go past the total.
func (b *Budget) Reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total > 0 && b.used+n > b.total {
		return false
	}
	b.used += n
	return true
}

// Give takes n bytes back; decoderBuffers says they were a decoder's
// scratch memory, now garbage, which a large enough amount of returns to
// the system (ReturnMemory).
func (b *Budget) Give(n int64, decoderBuffers bool) {
	b.mu.Lock()
	b.used -= n
	run := decoderBuffers && b.ReturnMemory != nil && n >= b.ReturnAfter && !b.returning
	if run {
		b.returning = true
	}
	b.mu.Unlock()
	if run {
		go func() {
			b.ReturnMemory()
			b.mu.Lock()
			b.returning = false
			b.mu.Unlock()
		}()
	}
}
