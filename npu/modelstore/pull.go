package modelstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/hub"
)

// pull is one running download that callers share: the first starts it,
// later ones join, each gets the progress and the result, and the
// download stops only when every caller has left.
type pull struct {
	done   chan struct{}
	err    error // set before done closes
	cancel context.CancelFunc

	mu       sync.Mutex
	waiters  int
	watchers map[int]func(npu.PullProgress)
	nextID   int
	last     npu.PullProgress
}

// Pull downloads hub repository repo as model hub.ModelName(repo). A pull
// of the same repository already running is joined, not repeated. A pull
// that fails leaves nothing behind (the next one starts over).
func (s *Store) Pull(ctx context.Context, repo string, progress func(npu.PullProgress)) error {
	if err := ValidRepo(repo); err != nil {
		return err
	}
	if s.hub == nil {
		return fmt.Errorf("cannot pull %q: no model hub is configured: %w", repo, npu.ErrNotSupported)
	}
	if progress == nil {
		progress = func(npu.PullProgress) {}
	}
	s.mu.Lock()
	p, running := s.pulls[repo]
	if !running {
		name := hub.ModelName(repo)
		if err := s.claimLocked(name); err != nil {
			s.mu.Unlock()
			return err
		}
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p = &pull{done: make(chan struct{}), cancel: cancel, watchers: map[int]func(npu.PullProgress){}}
		s.pulls[repo] = p
		// The starter watches before the download begins, so it sees
		// every step; a later caller sees the latest, then the rest.
		id := p.join(progress)
		defer p.leave(id)
		go s.run(pctx, p, repo, name)
		s.mu.Unlock()
		return p.wait(ctx)
	}
	s.mu.Unlock()
	id := p.join(progress)
	defer p.leave(id)
	return p.wait(ctx)
}

// wait returns the pull's result, or ctx's cause when the caller leaves
// first.
func (p *pull) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// run downloads into a temporary folder, then renames it into place.
func (s *Store) run(ctx context.Context, p *pull, repo, name string) {
	err := s.hub.Download(ctx, repo, s.dir, func(hp hub.Progress) {
		p.report(npu.PullProgress{Status: hp.Status, Digest: hp.File, Total: hp.Total, Completed: hp.Completed})
	})
	if err != nil {
		// Nothing half-done stays: the next pull starts over.
		if rmErr := os.RemoveAll(s.Path(name) + partialSuffix); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing what the failed pull left: %w", rmErr))
		}
		err = fmt.Errorf("pulling %q: %w", repo, err)
	}
	s.mu.Lock()
	delete(s.pulls, repo)
	delete(s.busy, name)
	s.mu.Unlock()
	p.cancel()
	p.err = err
	close(p.done)
}

func (p *pull) join(progress func(npu.PullProgress)) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiters++
	id := p.nextID
	p.nextID++
	p.watchers[id] = progress
	if p.last.Status != "" {
		progress(p.last) // a joiner sees where the pull is
	}
	return id
}

// leave ends a caller's wait; the last one to leave a pull that has not
// finished stops it.
func (p *pull) leave(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.watchers, id)
	if p.waiters--; p.waiters == 0 {
		p.cancel()
	}
}

func (p *pull) report(pp npu.PullProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = pp
	for _, w := range p.watchers {
		w(pp)
	}
}
