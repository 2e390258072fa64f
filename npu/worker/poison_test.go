package worker

import (
	"fmt"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/errclass"
)

// Issue 25 item 5: a request that crashed a worker twice is refused, not
// retried; a tenant whose requests keep crashing workers is throttled
// (never the keyless single user); both are forgotten after the window.
func TestCrashMemory(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newCrashMemory(CrashConfig{Window: time.Minute, Anonymous: "anonymous"}, func() time.Time { return now })
	poison := fingerprint(&npu.Request{Model: "m", Prompt: "crash me"})
	assert.Equal(t, poison, fingerprint(&npu.Request{Model: "m", Prompt: "crash me", Tenant: "bob", Timeout: time.Second}),
		"the same body from anyone, with any deadline, is the same request")
	assert.NotEqual(t, poison, fingerprint(&npu.Request{Model: "m", Prompt: "crash me too"}))

	assert.False(t, m.crashed(poison, "alice"))
	assert.NoError(t, m.check(poison, ""), "one crash may be bad luck")
	now = now.Add(10 * time.Second)
	assert.True(t, m.crashed(poison, "alice"), "the second crash is a repeat")
	assert.ErrorIs(t, m.check(poison, ""), npu.ErrEngineCrashedOnRequest, "whoever sends it")
	assert.ErrorIs(t, m.check("other", "alice"), npu.ErrCrashThrottled, "alice's requests crashed workers twice")
	assert.NoError(t, m.check("other", "bob"), "bob is not alice")
	for _, tenant := range []string{"", "anonymous"} {
		assert.False(t, m.crashed("third"+tenant, tenant))
		assert.False(t, m.crashed("fourth"+tenant, tenant))
		assert.NoError(t, m.check("fifth", tenant), "no key (one user): never throttled")
	}

	now = now.Add(time.Minute)
	assert.NoError(t, m.check(poison, "alice"), "after the window both are forgotten")
}

// Issue 25 item 5: what the crash memory holds is bounded.
func TestCrashMemoryIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newCrashMemory(CrashConfig{Window: time.Hour, MaxRemembered: 3}, func() time.Time { return now })
	for i := range 50 {
		now = now.Add(time.Second)
		m.crashed(fmt.Sprint("request ", i), fmt.Sprint("tenant ", i))
	}
	requests, tenants := m.size()
	assert.Equal(t, 3, requests)
	assert.Equal(t, 3, tenants)
	assert.True(t, m.crashed("request 49", ""), "the newest are kept")
}

// Issue 25 item 5: a device is unhealthy after faults of distinct
// requests: one poison request crashing again and again is no sick device.
func TestDeviceHealthCountsDistinctRequests(t *testing.T) {
	h := newHealth(HealthConfig{Failures: 2, Window: time.Minute, ProbeAfter: time.Hour}, nil, slog.New(slog.DiscardHandler))
	h.track("NPU")
	for range 5 {
		h.failed("NPU", "poison", "crash")
	}
	assert.Empty(t, h.unhealthyDevices(), "one request, however often")
	h.failed("NPU", "another", "crash")
	assert.Equal(t, []string{"NPU"}, h.unhealthyDevices())
}

// Issue 25 item 5: a request crashing a worker again is refused as
// non-retryable, and its repeat does not grow the restart backoff other
// requests for the model wait.
func TestRepeatCrashIsRefusedAndKeepsTheBackoff(t *testing.T) {
	e := &Engine{cfg: Config{Log: slog.New(slog.DiscardHandler)},
		health:  newHealth(HealthConfig{Failures: 2}, nil, slog.New(slog.DiscardHandler)),
		crashes: newCrashMemory(CrashConfig{}, time.Now),
		procs:   map[string]*proc{}, loadedIn: map[string]*proc{}, restarts: map[string]int{}, byModel: map[string]int{}}
	req := &npu.Request{Model: "m", Prompt: "crash me", Tenant: "alice"}
	fp := fingerprint(req)
	crash := func() error {
		p := &proc{model: "m", cmd: &exec.Cmd{}}
		e.procs["m"] = p
		return e.requestFault(req, fp, p, &FaultError{Model: "m", Device: "NPU", Cause: "signal: segmentation fault", Kind: npu.ErrEngineCrashed})
	}
	err := crash()
	require.ErrorIs(t, err, npu.ErrEngineCrashed)
	assert.True(t, errclass.Of(err).Retryable, "the first crash may be retried")
	err = crash()
	require.ErrorIs(t, err, npu.ErrEngineCrashedOnRequest)
	assert.False(t, errclass.Of(err).Retryable)
	assert.Contains(t, err.Error(), "segmentation fault")
	assert.Equal(t, 1, e.restarts["m"], "the repeat did not grow the backoff")
	assert.Equal(t, 2, e.byModel["m"], "both restarts are counted")
	assert.Equal(t, map[string]bool{"NPU": true}, e.health.snapshot(), "one request: the device stays healthy")
}
