package worker

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/npud/npud/npu"
)

// HealthConfig says when a device is unhealthy: Failures crashes or hangs
// within Window. An unhealthy device is tried again (probed, by the next
// load that may use it) ProbeAfter its last failure.
type HealthConfig struct {
	Failures   int
	Window     time.Duration
	ProbeAfter time.Duration
}

// health counts each device's faults. Devices are the engine's few; the
// map holds only names a worker reported.
type health struct {
	cfg HealthConfig
	obs Observer
	log *slog.Logger

	mu       sync.Mutex
	failures map[string][]time.Time
	sick     map[string]bool
	now      func() time.Time
}

func newHealth(cfg HealthConfig, obs Observer, log *slog.Logger) *health {
	if cfg.Failures <= 0 {
		cfg.Failures = 3
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.ProbeAfter <= 0 {
		cfg.ProbeAfter = 5 * time.Minute
	}
	return &health{cfg: cfg, obs: obs, log: log, failures: map[string][]time.Time{}, sick: map[string]bool{}, now: time.Now}
}

// track starts reporting a device as healthy.
func (h *health) track(device string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.failures[device]; !ok {
		h.failures[device] = nil
		h.report(device, true)
	}
}

// failed charges a fault to device.
func (h *health) failed(device, why string) {
	if device == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	recent := slices.DeleteFunc(h.failures[device], func(t time.Time) bool { return now.Sub(t) > h.cfg.Window })
	recent = append(recent, now)
	h.failures[device] = recent
	if len(recent) >= h.cfg.Failures && !h.sick[device] {
		h.sick[device] = true
		h.report(device, false)
		h.log.Warn("device marked unhealthy: AUTO places models on the next device until it is probed again",
			"device", device, "failures", len(recent), "window", h.cfg.Window, "probe_after", h.cfg.ProbeAfter, "last", why)
	}
}

// unhealthyDevices lists the devices to avoid now. A sick device whose
// last failure is ProbeAfter old is allowed again: the next load probes it
// and a further fault marks it sick at once.
func (h *health) unhealthyDevices() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for device := range h.sick {
		if h.probeDue(device) {
			continue
		}
		out = append(out, device)
	}
	slices.Sort(out)
	return out
}

// allow refuses work for an explicitly named device that is unhealthy: it
// is never silently replaced.
func (h *health) allow(device string) error {
	if device == "" || device == "AUTO" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sick[device] && !h.probeDue(device) {
		last := h.failures[device][len(h.failures[device])-1]
		return fmt.Errorf("device %s is unhealthy (%d crashes or hangs within %s); it is tried again at %s: %w",
			device, len(h.failures[device]), h.cfg.Window, last.Add(h.cfg.ProbeAfter).Format(time.RFC3339), npu.ErrDeviceUnhealthy)
	}
	return nil
}

// probeDue: the sick device's last failure is ProbeAfter old.
func (h *health) probeDue(device string) bool {
	f := h.failures[device]
	return len(f) > 0 && h.now().Sub(f[len(f)-1]) >= h.cfg.ProbeAfter
}

// recovered marks a device healthy after work on it went well.
func (h *health) recovered(device string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sick[device] {
		delete(h.sick, device)
		h.failures[device] = nil
		h.report(device, true)
		h.log.Info("device healthy again", "device", device)
	}
}

func (h *health) snapshot() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]bool, len(h.failures))
	for device := range h.failures {
		out[device] = !h.sick[device] || h.probeDue(device)
	}
	return out
}

// observe starts reporting to obs, with every device's health now.
func (h *health) observe(obs Observer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.obs = obs
	for device := range h.failures {
		h.report(device, !h.sick[device])
	}
}

func (h *health) report(device string, healthy bool) {
	if h.obs != nil {
		h.obs.DeviceHealth(device, healthy)
	}
}
