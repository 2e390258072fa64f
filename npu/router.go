package npu

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Upstream is a runner for another server's engine (npu/upstream), which
// this runner hands requests to: for models only it serves, and for
// overflow when the local queue is deep.
type Upstream struct {
	Name   string
	Runner *Runner
	// Healthy reports whether the upstream is in rotation; nil: always.
	Healthy func() bool
}

// InRotation reports whether requests may go to the upstream.
func (u *Upstream) InRotation() bool { return u.Healthy == nil || u.Healthy() }

// Routing says where requests may go besides the local engine.
type Routing struct {
	Upstreams []Upstream
	// OverflowAfter: a request for a local model goes to an upstream
	// serving the same model (by name or alias) when its wait for the
	// local engine is estimated over this bound, or the local queue is
	// full; never otherwise. 0 = no overflow.
	OverflowAfter time.Duration
}

// SetRouting sets the upstreams. Call it before serving. The upstreams'
// runners count tenants' generations with this runner: a tenant's stream
// cap is one, wherever its generations run.
func (r *Runner) SetRouting(rt Routing) {
	r.routing = rt
	for _, up := range rt.Upstreams {
		up.Runner.tenants = r.tenants
	}
}

// Upstreams are the runners requests may be handed to.
func (r *Runner) Upstreams() []Upstream { return r.routing.Upstreams }

// upstreamFor is a healthy upstream serving one of names, and whether any
// upstream serves one at all (healthy or not).
func (r *Runner) upstreamFor(names ...string) (*Upstream, bool) {
	served := false
	for i := range r.routing.Upstreams {
		up := &r.routing.Upstreams[i]
		for _, name := range names {
			if _, err := up.Runner.localModel(name); err != nil {
				continue
			}
			served = true
			if up.InRotation() {
				return up, true
			}
		}
	}
	return nil, served
}

// owner is the runner that serves model id: this one when its engine does
// (or nobody does), else the upstream's.
func (r *Runner) owner(id string) *Runner {
	if _, err := r.localModel(id); err == nil {
		return r
	}
	for _, up := range r.routing.Upstreams {
		if _, err := up.Runner.localModel(id); err == nil {
			return up.Runner
		}
	}
	return r
}

// namesOf are the names model is known by here: its own and its aliases.
func (r *Runner) namesOf(model string) []string {
	names := []string{model}
	for alias, target := range r.cfg.Aliases {
		if target == model {
			names = append(names, alias)
		}
	}
	return names
}

// route hands req to an upstream when it should go there: its model is
// served only upstream, or the local engine is too busy. ok is false when
// the request stays here.
func (r *Runner) route(req *Request) (s *Stream, ok bool, err error) {
	if len(r.routing.Upstreams) == 0 {
		return nil, false, nil
	}
	m, localErr := r.localModel(req.Model)
	if localErr != nil {
		up, served := r.upstreamFor(req.Model)
		switch {
		case up != nil:
			s, err := up.Runner.Start(req)
			return s, true, err
		case served:
			return nil, true, fmt.Errorf("model %q is served by an upstream that is out of rotation: %w", req.Model, ErrUpstreamUnavailable)
		}
		return nil, false, nil
	}
	if r.routing.OverflowAfter <= 0 || !r.overloaded() {
		return nil, false, nil
	}
	names := append([]string{req.Model}, r.namesOf(m.ID)...)
	up, _ := r.upstreamFor(names...)
	if up == nil {
		return nil, false, nil
	}
	for _, name := range names {
		if upModel, err := up.Runner.localModel(name); err == nil {
			over := *req
			over.Model = upModel.ID
			s, err := up.Runner.Start(&over)
			if err == nil {
				r.log.Debug("request overflowed to an upstream", "model", m.ID, "upstream", up.Name,
					"estimated_wait", r.sched.EstimatedWait())
			}
			return s, true, err
		}
	}
	return nil, false, nil
}

// overloaded: a new request would wait longer than the overflow bound for
// the local engine, or could not queue at all.
func (r *Runner) overloaded() bool {
	return r.sched.Full() || r.sched.EstimatedWait() > r.routing.OverflowAfter
}

// eachUpstream applies fn (a drain step) to the upstreams' runners.
func (r *Runner) eachUpstream(fn func(*Runner)) {
	for _, up := range r.routing.Upstreams {
		fn(up.Runner)
	}
}

// waitUpstreams waits for the upstreams' generations too.
func (r *Runner) waitUpstreams(ctx context.Context) error {
	var errs []error
	r.eachUpstream(func(u *Runner) { errs = append(errs, u.Wait(ctx)) })
	return errors.Join(errs...)
}
