package audioin

import (
	"errors"

	"github.com/npud/npud/wire/membudget"
)

// ErrBusy is returned when decoding a file would take the daemon past its
// budget of decoded audio memory (--max-audio-memory): a server-side
// refusal the client may retry (503 with Retry-After), not the file's fault.
var ErrBusy = errors.New("the memory for decoded audio is in use by other requests, retry later")

// meter counts what one decode allocates against Limits.Memory before it
// allocates it: the 16 kHz output (and, while it grows, the array it grows
// from, garbage until the collector runs) and the decoder's working
// buffers. A compressed file's header may lie about its length, so the
// output is counted as it grows, not from the header. When the decode is
// done only the clip stays reserved (settle), until the transcription
// ends (Clip.Release).
type meter struct {
	budget *membudget.Budget // nil: counted against nothing
	held   int64
}

// need makes the reservation at least n bytes, or refuses with ErrBusy.
// It reserves in steps of at least half of what it holds, so a long file
// takes the budget's lock a few dozen times, not once per frame.
func (m *meter) need(n int64) error {
	if m == nil || m.budget == nil || n <= m.held {
		return nil
	}
	short := n - m.held
	if step := max(short, m.held/2, 1<<20); step > short && m.budget.Reserve(step) {
		m.held += step
		return nil
	}
	if !m.budget.Reserve(short) {
		return ErrBusy
	}
	m.held = n
	return nil
}

// more reserves n bytes more than the meter holds.
func (m *meter) more(n int64) error {
	if m == nil {
		return nil
	}
	return m.need(m.held + n)
}

// room returns s with room for n more samples, grown by half again at a
// time. The new array and the old one are reserved first, with extra
// bytes of working buffers on top.
func (m *meter) room(s []float32, n int, extra int64) ([]float32, error) {
	want := len(s) + n
	if want <= cap(s) {
		return s, nil
	}
	grown := max(want, cap(s)+cap(s)/2, 1<<14)
	if err := m.need(4*int64(grown+cap(s)) + extra); err != nil {
		return nil, err
	}
	t := make([]float32, len(s), grown)
	copy(t, s)
	return t, nil
}

// settle keeps what the decoded clip holds and gives the rest (the
// decoder's buffers and the arrays the output grew from) back.
func (m *meter) settle(samples []float32) {
	if m == nil || m.budget == nil {
		return
	}
	if keep := 4 * int64(cap(samples)); m.held > keep {
		m.budget.Give(m.held-keep, true)
		m.held = keep
	}
}

// release gives everything back; a second call does nothing.
func (m *meter) release() {
	if m == nil || m.budget == nil || m.held == 0 {
		return
	}
	m.budget.Give(m.held, false)
	m.held = 0
}

// Release gives the memory the clip holds back to the budget
// (Limits.Memory): call it when the transcription is done with Samples.
// It may be called more than once.
func (c Clip) Release() { c.mem.release() }
