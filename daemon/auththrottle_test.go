package daemon

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAuthThrottle(t *testing.T) {
	now := time.Now()
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, tc := range []struct {
		name      string
		perMinute int
		failures  int
		after     time.Duration
		blocked   bool
	}{
		{"under the budget", 3, 2, 0, false},
		{"budget spent", 3, 3, 0, true},
		{"one failure refilled after 20s at 3/min", 3, 3, 21 * time.Second, false},
		{"no limit", 0, 100, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newAuthThrottle(16)
			th.configure(tc.perMinute)
			for range tc.failures {
				th.failed(a, now)
			}
			blocked, wait := th.blocked(a, now.Add(tc.after))
			assert.Equal(t, tc.blocked, blocked)
			if blocked {
				assert.Positive(t, wait)
			}
			other, _ := th.blocked(b, now)
			assert.False(t, other, "another address keeps its budget")
		})
	}
}

func TestAuthThrottleIsBounded(t *testing.T) {
	th := newAuthThrottle(8)
	th.configure(1)
	now := time.Now()
	for i := range 1000 {
		th.failed(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
	}
	assert.LessOrEqual(t, len(th.addrs), 8)
}

func TestClientAddr(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:5000":          "192.0.2.1",
		"[::1]:80":                "::1",
		"[::ffff:192.0.2.1]:5000": "192.0.2.1",
		"garbage":                 "invalid IP",
	} {
		assert.Equal(t, want, clientAddr(in).String(), in)
	}
}
