package daemon

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxThrottledAddrs bounds the addresses whose failed authentications are
// remembered: a client cannot grow the map by changing addresses.
const maxThrottledAddrs = 4096

// authThrottle limits failed authentications per client address, so that
// one connection cannot try thousands of keys a second. While an address
// is over its budget every request from it is refused before its key is
// checked: a guess that happened to be right must not be told apart.
type authThrottle struct {
	mu        sync.Mutex
	perMinute int
	maxAddrs  int
	addrs     map[netip.Addr]*rate.Limiter
}

func newAuthThrottle(maxAddrs int) *authThrottle {
	return &authThrottle{maxAddrs: maxAddrs, addrs: map[netip.Addr]*rate.Limiter{}}
}

// configure sets the budget (0 = no limit); counts survive a reload.
func (t *authThrottle) configure(perMinute int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.perMinute = perMinute
	for _, l := range t.addrs {
		l.SetLimit(t.limit())
		l.SetBurst(max(perMinute, 1))
	}
}

func (t *authThrottle) limit() rate.Limit { return rate.Limit(float64(t.perMinute) / 60) }

// blocked reports whether addr has used its budget, and when it may try
// again.
func (t *authThrottle) blocked(addr netip.Addr, now time.Time) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.addrs[addr]
	if t.perMinute <= 0 || !ok || l.TokensAt(now) >= 1 {
		return false, 0
	}
	wait := time.Duration((1 - l.TokensAt(now)) / float64(l.Limit()) * float64(time.Second))
	return true, max(wait, time.Second)
}

// failed spends one failure of addr's budget.
func (t *authThrottle) failed(addr netip.Addr, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.perMinute <= 0 {
		return
	}
	l, ok := t.addrs[addr]
	if !ok {
		t.makeRoomLocked(now)
		l = rate.NewLimiter(t.limit(), t.perMinute)
		t.addrs[addr] = l
	}
	l.AllowN(now, 1)
}

// makeRoomLocked keeps the map under its bound: addresses whose budget
// has refilled are forgotten first (they are as good as new), then any.
func (t *authThrottle) makeRoomLocked(now time.Time) {
	if len(t.addrs) < t.maxAddrs {
		return
	}
	for a, l := range t.addrs {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(t.addrs, a)
		}
	}
	for a := range t.addrs {
		if len(t.addrs) < t.maxAddrs {
			break
		}
		delete(t.addrs, a)
	}
}

// clientAddr is the address a request came from (the proxy's, behind a
// reverse proxy).
func clientAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
