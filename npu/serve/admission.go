package serve

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/npud/npud/npu"
)

// Limits are what one tenant may ask of the engines.
type Limits struct {
	// RatePerMinute is how many requests a tenant may make a minute, with
	// bursts of RateBurst; 0 = no rate limit.
	RatePerMinute int
	RateBurst     int
	// StreamCap is how many generations, embeddings and transcriptions
	// one tenant may run or queue at once, on every engine together;
	// 0 = no cap.
	StreamCap int
}

// RateLimitError is a request refused because its tenant is over its
// rate; it wraps ErrRateLimited.
type RateLimitError struct {
	Tenant string
	Wait   time.Duration // until a request fits again
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("tenant %q is over its rate limit; retry in %s", e.Tenant, e.Wait.Round(time.Millisecond))
}

func (e *RateLimitError) Unwrap() error { return npu.ErrRateLimited }

// AdmitRequest takes one request from tenant's rate, at now. The daemon
// asks it when a request arrives, before its body is read (so an abusive
// client costs a map lookup), and for each message that starts work on a
// WebSocket; the work itself is then admitted against the stream cap by
// Start, Embed and Transcribe. The error is a *RateLimitError.
func (r *Router) AdmitRequest(tenant string, now time.Time) error {
	if wait, ok := r.rates.allow(tenant, now); !ok {
		err := &RateLimitError{Tenant: tenant, Wait: wait}
		r.observer.Refused(tenant, err)
		return err
	}
	return nil
}

// SetLimits sets what one tenant may do. Counts already taken stay: a
// reload changes the limits, not what tenants have running.
func (r *Router) SetLimits(l Limits) {
	r.rates.configure(l.RatePerMinute, l.RateBurst)
	r.tenants.setLimit(l.StreamCap)
}

// tenantRates holds each tenant's request rate. Its map holds a limiter
// per tenant that made a request: the daemon's tenants are its API keys'
// names and "anonymous", so it is bounded by the keys configured.
type tenantRates struct {
	mu        sync.Mutex
	perMinute int
	burst     int
	limiters  map[string]*rate.Limiter
}

func (t *tenantRates) configure(perMinute, burst int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.perMinute, t.burst = perMinute, burst
	for _, l := range t.limiters {
		l.SetLimit(t.limit())
		l.SetBurst(burst)
	}
}

func (t *tenantRates) limit() rate.Limit {
	if t.perMinute <= 0 {
		return rate.Inf
	}
	return rate.Limit(float64(t.perMinute) / 60)
}

// allow takes one request from tenant's budget, or says how long to wait.
func (t *tenantRates) allow(tenant string, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.perMinute <= 0 {
		return 0, true
	}
	l := t.limiters[tenant]
	if l == nil {
		if t.limiters == nil {
			t.limiters = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(t.limit(), t.burst)
		t.limiters[tenant] = l
	}
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return time.Minute, false
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// admit counts one piece of work for tenant against its stream cap, on
// whichever engine it runs; release ends it. The error wraps
// ErrTooManyStreams.
func (r *Router) admit(tenant string) (release func(), err error) {
	release, ok := r.tenants.open(tenant)
	if !ok {
		r.observer.Refused(tenant, npu.ErrTooManyStreams)
		return nil, fmt.Errorf("tenant %q already runs or queues its maximum of %d generations, embeddings and transcriptions: %w",
			tenant, r.tenants.limit(), npu.ErrTooManyStreams)
	}
	return release, nil
}

// tenantStreams counts each tenant's work. The map holds only tenants
// with work running, so it is bounded by them.
type tenantStreams struct {
	mu     sync.Mutex
	max    int
	counts map[string]int
}

func (t *tenantStreams) setLimit(n int) {
	t.mu.Lock()
	t.max = n
	t.mu.Unlock()
}

func (t *tenantStreams) limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max
}

// open counts one piece of work for tenant ("" counts against nobody).
func (t *tenantStreams) open(tenant string) (release func(), ok bool) {
	if tenant == "" {
		return func() {}, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.max > 0 && t.counts[tenant] >= t.max {
		return nil, false
	}
	if t.counts == nil {
		t.counts = map[string]int{}
	}
	t.counts[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.counts[tenant]--; t.counts[tenant] <= 0 {
				delete(t.counts, tenant)
			}
		})
	}, true
}
