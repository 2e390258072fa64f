// Package journal keeps what a stream emitted so that a client can attach to
// a generation more than once: a second start with the same request id
// joins the running (or recently finished) generation instead of starting
// another, and a client that lost its connection picks the stream up from
// the last event it saw, with no gap and no duplicate.
//
// It sits between the bridge and the writers: a pump goroutine reads the
// npu.Stream and appends each event to the journal; writers read the journal
// through a Cursor. Data still flows one way. Cancellation flows back: when
// the last reader leaves, a non-resumable generation is cancelled at once
// and a resumable one after the window, unless a reader came back.
package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/npud/npud/npu"
)

var (
	// ErrConflict: the request id is in use by a different request.
	ErrConflict = errors.New("request id already used by a different request")
	// ErrExpired: the events asked for are no longer kept.
	ErrExpired = npu.ErrResumeExpired
	// ErrAfterEnd is what Cursor.NextEvent returns to a reader that
	// started after the last event: it has everything, and only the
	// stream's terminator is left to write.
	ErrAfterEnd = errors.New("nothing after the end")
	// ErrAbandoned is the outcome of a generation stopped because every
	// reader had left (npu.ErrClientGone, for the readers that left).
	ErrAbandoned = npu.ErrStreamAbandoned
	// ErrCancelled ends the stream for every reader when the client that
	// started the generation cancelled it.
	ErrCancelled = npu.ErrStreamCancelled
)

// Config bounds what journals keep.
type Config struct {
	// Window is how long a generation's events stay after it finished,
	// and how long a resumable generation runs on with no reader.
	Window time.Duration
	// MaxBytes caps the text kept per journal; older events go first.
	MaxBytes int
	// Heartbeat, when positive, makes a Cursor return heartbeats after
	// that long without an event.
	Heartbeat time.Duration
}

// Entry is one event of a stream, numbered from 0.
type Entry struct {
	Index     int
	Text      string
	Reasoning string // the model's reasoning (see npu.Event)
	ToolCalls []npu.ToolCallDelta
	Tokens    int  // the engine callbacks Text came from (see npu.Event)
	Heartbeat bool // from a Cursor only; never stored
	// Loading is set on a heartbeat while the generation waits for its
	// model's load (npu.Event.Loading).
	Loading *npu.LoadStatus
	Done    bool
	Result  npu.Result // with Done
	Err     error      // the stream's failure; the last entry
	// AfterEnd: the reader asked to start after the last entry; it has
	// everything, and only the stream's terminator is left to write.
	AfterEnd bool
}

// Key names a journal: the client's id within its tenant. Ids are the
// client's choice, so one tenant's id never reaches another's journal.
type Key struct {
	Tenant, ID string
}

// Journal is one generation's emitted events.
type Journal struct {
	key         Key
	owner       string // the id of the request that started it: the completion id every reader shows
	fingerprint string
	resumable   bool
	stream      npu.Stream
	reg         *Registry
	started     time.Time

	mu        sync.Mutex
	entries   []Entry // entries[0] has Index first
	first     int
	bytes     int
	ended     bool          // the last entry (Done or Err) is in
	changed   chan struct{} // closed and replaced on every append
	readers   map[*Cursor]struct{}
	idle      *time.Timer // cancels a resumable generation nobody reads
	abandoned bool
}

// Registry holds the journals by request id.
type Registry struct {
	cfg Config

	mu   sync.Mutex
	byID map[Key]*Journal
	wg   sync.WaitGroup // pumps
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg Config) *Registry {
	return &Registry{cfg: cfg, byID: map[Key]*Journal{}}
}

// Open returns the journal of key, starting the generation with start
// when there is none; owner is the id of the request that starts it.
// fingerprint identifies the request (a digest of its body): the same key
// with another fingerprint is ErrConflict. joined says whether an
// existing generation was joined. resumable keeps a generation running for
// the window after its last reader left.
func (r *Registry) Open(key Key, owner, fingerprint string, resumable bool, start func() (npu.Stream, error)) (j *Journal, joined bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.byID[key]; ok {
		if j.fingerprint != fingerprint {
			return nil, false, fmt.Errorf("id %q: %w", key.ID, ErrConflict)
		}
		return j, true, nil
	}
	stream, err := start()
	if err != nil {
		return nil, false, err
	}
	j = &Journal{key: key, owner: owner, fingerprint: fingerprint, resumable: resumable, stream: stream, reg: r,
		changed: make(chan struct{}), readers: map[*Cursor]struct{}{}, started: time.Now()}
	r.byID[key] = j
	r.wg.Add(1)
	go j.pump()
	return j, false, nil
}

// Lookup returns the journal of key, if it is kept.
func (r *Registry) Lookup(key Key) (*Journal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.byID[key]
	return j, ok
}

// Len is the number of journals kept.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Wait blocks until every pump has returned or ctx ends.
func (r *Registry) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Registry) forget(j *Journal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[j.key] == j {
		delete(r.byID, j.key)
	}
}

// pump moves the stream's events into the journal. It reads as fast as the
// bridge gives them, so the bridge never backs up; readers that are behind
// read from the journal.
func (j *Journal) pump() {
	defer j.reg.wg.Done()
	defer j.stream.Close()
	for {
		ev, err := j.stream.Next(context.Background())
		switch {
		case err != nil && errors.Is(err, npu.ErrClientGone):
			// Whoever reads this entry is not the client that left.
			j.append(Entry{Err: fmt.Errorf("%w (%s)", ErrAbandoned, strings.TrimPrefix(err.Error(), npu.ErrClientGone.Error()+": "))})
		case err != nil:
			j.append(Entry{Err: err})
		case ev.Heartbeat:
			continue // readers make their own
		case ev.Done:
			j.append(Entry{Done: true, Result: ev.Result})
		default:
			j.append(Entry{Text: ev.Text, Reasoning: ev.Reasoning, ToolCalls: ev.ToolCalls, Tokens: ev.Tokens})
			continue
		}
		// Finished: keep the events for the window, then forget them.
		time.AfterFunc(j.reg.cfg.Window, func() { j.reg.forget(j) })
		return
	}
}

// size is what an entry holds of the answer: its text, reasoning and
// pieces of tool calls.
func (e *Entry) size() int {
	n := len(e.Text) + len(e.Reasoning)
	for _, c := range e.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n
}

func (j *Journal) append(e Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Index = j.first + len(j.entries)
	j.entries = append(j.entries, e)
	j.bytes += e.size()
	for j.bytes > j.reg.cfg.MaxBytes && len(j.entries) > 1 {
		j.bytes -= j.entries[0].size()
		j.entries[0] = Entry{}
		j.entries = j.entries[1:]
		j.first++
	}
	// Readers whose next event was just dropped fell behind by more than
	// the journal keeps: the bridge's hard limit, one level up. When no
	// reader can go on and none may come back, stop the engine.
	if !j.resumable && len(j.readers) > 0 && !j.abandoned {
		behind := 0
		for c := range j.readers {
			if c.next < j.first {
				behind++
			}
		}
		if behind == len(j.readers) {
			j.abandoned = true
			j.stream.Abandon(fmt.Errorf("every reader of %q fell %d bytes behind: %w", j.key.ID, j.reg.cfg.MaxBytes, npu.ErrSlowConsumer))
		}
	}
	if e.Done || e.Err != nil {
		j.ended = true
	}
	close(j.changed)
	j.changed = make(chan struct{})
}

// FirstTokenAt is when the engine produced its first text, or zero.
func (j *Journal) FirstTokenAt() time.Time { return j.stream.FirstTokenAt() }

// ID is the client's id for the journal.
func (j *Journal) ID() string { return j.key.ID }

// Owner is the id of the request that started the generation.
func (j *Journal) Owner() string { return j.owner }

// Started is when the generation was started: every reader of it, joined
// or resumed later, describes the same completion (OpenAI's created).
func (j *Journal) Started() time.Time { return j.started }

// Stats describes the generation, as npu.Stream.Stats does.
func (j *Journal) Stats() npu.StreamStats { return j.stream.Stats() }

// Attach adds a reader that starts at event from (0 = the beginning). The
// reader must Close its cursor.
func (j *Journal) Attach(from int) *Cursor {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := &Cursor{j: j, next: from}
	j.readers[c] = struct{}{}
	if j.idle != nil {
		j.idle.Stop()
		j.idle = nil
	}
	return c
}

// Cancel stops the generation whoever reads it: a client's explicit
// cancel, not just one reader leaving.
func (j *Journal) Cancel() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.ended && !j.abandoned {
		j.abandoned = true
		j.stream.Abandon(ErrCancelled) // every reader learns why; the engine gets Cancel
	}
}

// detach removes a reader. The last reader to leave an unfinished
// generation cancels it: at once, or after the window when resumable.
func (j *Journal) detach(c *Cursor) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.readers, c)
	if len(j.readers) > 0 || j.ended || j.abandoned {
		return
	}
	if !j.resumable {
		j.abandonLocked()
		return
	}
	j.idle = time.AfterFunc(j.reg.cfg.Window, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.readers) == 0 && !j.ended && !j.abandoned {
			j.abandonLocked()
		}
	})
}

func (j *Journal) abandonLocked() {
	j.abandoned = true
	j.stream.Abandon(npu.ErrClientGone) // the engine gets Cancel at its next callback
}

// Cursor reads a journal from one position. Not safe for concurrent use.
type Cursor struct {
	j      *Journal
	next   int
	read   bool // something was read: later expiry means this reader fell behind
	closed bool
	timer  *time.Timer
}

// NextEvent is Next in the bridge's terms (npu.Event), so that writers
// read a journal as they read a stream: a failure comes back as the
// error, the position past the end as ErrAfterEnd. Index is the event's
// number (for resumable streams' ids).
func (c *Cursor) NextEvent(ctx context.Context) (ev npu.Event, index int, err error) {
	e, err := c.Next(ctx)
	switch {
	case err != nil:
		return npu.Event{}, e.Index, err
	case e.AfterEnd:
		return npu.Event{}, e.Index, ErrAfterEnd
	case e.Heartbeat:
		return npu.Event{Heartbeat: true, Loading: e.Loading}, e.Index, nil
	case e.Err != nil:
		return npu.Event{}, e.Index, e.Err
	case e.Done:
		return npu.Event{Done: true, Result: e.Result}, e.Index, nil
	}
	return npu.Event{Text: e.Text, Reasoning: e.Reasoning, ToolCalls: e.ToolCalls, Tokens: e.Tokens}, e.Index, nil
}

// Next returns the next entry, waiting for it; a heartbeat after the
// configured quiet time; ErrExpired when the entry is no longer kept; or
// ctx's error (the reader left).
func (c *Cursor) Next(ctx context.Context) (Entry, error) {
	for {
		c.j.mu.Lock()
		if c.next < c.j.first {
			c.j.mu.Unlock()
			err := fmt.Errorf("event %d of %q (oldest kept: %d): %w", c.next, c.j.key.ID, c.j.first, ErrExpired)
			if c.read {
				// A reader that fell further behind than the journal
				// keeps: the same verdict as the bridge's hard limit.
				err = fmt.Errorf("%w: %w", npu.ErrSlowConsumer, err)
			}
			return Entry{}, err
		}
		if i := c.next - c.j.first; i < len(c.j.entries) {
			e := c.j.entries[i]
			c.next++ // under the journal's lock: append reads it
			c.j.mu.Unlock()
			c.read = true
			return e, nil
		}
		if c.j.ended {
			c.j.mu.Unlock()
			return Entry{Index: c.next, AfterEnd: true}, nil
		}
		changed := c.j.changed
		c.j.mu.Unlock()

		var beat <-chan time.Time
		if hb := c.j.reg.cfg.Heartbeat; hb > 0 {
			if c.timer == nil {
				c.timer = time.NewTimer(hb)
			} else {
				c.timer.Reset(hb)
			}
			beat = c.timer.C
		}
		select {
		case <-changed:
		case <-beat:
			c.j.mu.Lock()
			next := c.next
			c.j.mu.Unlock()
			beat := Entry{Index: next, Heartbeat: true}
			if c.j.stream != nil {
				if st, ok := c.j.stream.Loading(); ok {
					beat.Loading = &st
				}
			}
			return beat, nil
		case <-ctx.Done():
			return Entry{}, fmt.Errorf("%w: %w", npu.ErrClientGone, context.Cause(ctx))
		}
	}
}

// Position is the index of the next entry Next returns.
func (c *Cursor) Position() int {
	c.j.mu.Lock()
	defer c.j.mu.Unlock()
	return c.next
}

// Close detaches the reader.
func (c *Cursor) Close() {
	if c.closed {
		return
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.j.detach(c)
}
