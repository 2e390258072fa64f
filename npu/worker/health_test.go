package worker

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

type healthEvents []string

func (h *healthEvents) WorkerRestarted(model, reason string) {}
func (h *healthEvents) DeviceHealth(device string, healthy bool) {
	*h = append(*h, map[bool]string{true: "healthy ", false: "unhealthy "}[healthy]+device)
}

// Issue 15: a device with Failures faults within Window is unhealthy:
// AUTO avoids it and a named one is refused, until ProbeAfter its last
// fault, when the next load probes it; a load that works makes it healthy.
func TestDeviceHealth(t *testing.T) {
	var events healthEvents
	h := newHealth(HealthConfig{Failures: 2, Window: time.Minute, ProbeAfter: 10 * time.Minute}, &events, slog.New(slog.DiscardHandler))
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	h.track("NPU")
	h.track("CPU")

	h.failed("NPU", "", "crash")
	assert.Empty(t, h.unhealthyDevices(), "one fault is not enough")
	now = now.Add(2 * time.Minute)
	h.failed("NPU", "", "crash")
	assert.Empty(t, h.unhealthyDevices(), "the first fault left the window")
	now = now.Add(30 * time.Second)
	h.failed("NPU", "", "hang")
	assert.Equal(t, []string{"NPU"}, h.unhealthyDevices())
	assert.Equal(t, map[string]bool{"NPU": false, "CPU": true}, h.snapshot())
	require.ErrorIs(t, h.allow("NPU"), npu.ErrDeviceUnhealthy, "a named device is refused, never replaced")
	assert.NoError(t, h.allow("AUTO"))
	assert.NoError(t, h.allow("CPU"))

	now = now.Add(10 * time.Minute)
	assert.Empty(t, h.unhealthyDevices(), "probe time: the next load may try it")
	assert.NoError(t, h.allow("NPU"))
	h.recovered("NPU")
	assert.Equal(t, map[string]bool{"NPU": true, "CPU": true}, h.snapshot())
	assert.Equal(t, healthEvents{"healthy NPU", "healthy CPU", "unhealthy NPU", "healthy NPU"}, events)
}
