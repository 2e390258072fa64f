package serve

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// rateRefusals records the tenants refused for their rate.
type rateRefusals struct {
	noObserver
	tenants []string
}

func (o *rateRefusals) Refused(tenant string, err error) {
	if errors.Is(err, npu.ErrRateLimited) {
		o.tenants = append(o.tenants, tenant)
	}
}

// The router keeps each tenant's request rate with its stream cap: a
// tenant past its burst is refused with how long to wait, another tenant
// is not, the budget refills with time, and a reload's new limits apply to
// tenants already counted.
func TestRouterAdmitsRequestsAtTheirTenantsRate(t *testing.T) {
	obs := &rateRefusals{}
	r := NewRouter(newTestPool(&fakeEngine{}, PoolConfig{}), RouterConfig{Observer: obs,
		Limits: Limits{RatePerMinute: 60, RateBurst: 2}}, slog.New(slog.DiscardHandler))
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

	for _, tc := range []struct {
		tenant string
		at     time.Duration
		wait   time.Duration // 0: admitted
	}{
		{"alice", 0, 0},
		{"alice", 0, 0},
		{"alice", 0, time.Second}, // past the burst: one a second
		{"bob", 0, 0},             // another tenant's budget
		{"alice", 500 * time.Millisecond, 500 * time.Millisecond},
		{"alice", time.Second, 0}, // refilled
	} {
		err := r.AdmitRequest(tc.tenant, now.Add(tc.at))
		if tc.wait == 0 {
			require.NoError(t, err, "%s at %s", tc.tenant, tc.at)
			continue
		}
		var limited *RateLimitError
		require.ErrorAs(t, err, &limited, "%s at %s", tc.tenant, tc.at)
		require.ErrorIs(t, err, npu.ErrRateLimited)
		assert.Equal(t, tc.wait, limited.Wait)
		assert.Equal(t, "rate_limit_exceeded", npu.Classify(err).Code)
	}
	assert.Equal(t, []string{"alice", "alice"}, obs.tenants)

	r.SetLimits(Limits{}) // a reload lifts the limit
	for range 10 {
		require.NoError(t, r.AdmitRequest("alice", now.Add(time.Second)))
	}
}

// A generation's stream slot is free again by the time its client sees
// the end, on the local engine and on an upstream: a client at its stream
// cap that sends its next request as soon as the last one ended is
// admitted, every time.
func TestRouterFreesTheStreamSlotBeforeTheEndIsSeen(t *testing.T) {
	remote := &aliasEngine{fakeEngine: &fakeEngine{script: texts("far")}, id: "big"}
	r := newTestRouterWith(t, &fakeEngine{script: texts("near")}, PoolConfig{MaxQueue: 4}, RouterConfig{Limits: Limits{StreamCap: 1},
		Upstreams: []Upstream{{Name: "far", Pool: newTestPool(remote, PoolConfig{MaxQueue: 4})}}})
	for _, model := range []string{"m", "big"} {
		for i := range 200 {
			s, err := r.Start(&npu.Request{Model: model, Tenant: "alice", Prompt: "x"})
			require.NoError(t, err, "%s, request %d: the previous one had ended", model, i)
			_, _, err = drain(t, s)
			s.Close()
			require.NoError(t, err)
		}
	}
}
