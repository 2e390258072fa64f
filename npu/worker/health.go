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
// of distinct requests within Window (the same request crashing a worker
// again counts once: one tenant's poison request is no sick device). An unhealthy device is tried again (probed, by the next
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
	failures map[string][]failure
	sick     map[string]bool
	now      func() time.Time
}

// failure is one fault charged to a device: when, and the fingerprint of
// the request it ran ("" for a fault of no request, such as a compile).
type failure struct {
	at  time.Time
	key string
}

// distinct counts failures of distinct requests (each keyless one apart).
func distinct(fs []failure) int {
	seen := map[string]bool{}
	n := 0
	for _, f := range fs {
		if f.key == "" || !seen[f.key] {
			seen[f.key] = true
			n++
		}
	}
	return n
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
	return &health{cfg: cfg, obs: obs, log: log, failures: map[string][]failure{}, sick: map[string]bool{}, now: time.Now}
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

// failed charges a fault to device; key is the fingerprint of the request
// it ran ("" for none).
func (h *health) failed(device, key, why string) {
	if device == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	recent := slices.DeleteFunc(h.failures[device], func(f failure) bool { return now.Sub(f.at) > h.cfg.Window })
	recent = append(recent, failure{at: now, key: key})
	if len(recent) > 4*h.cfg.Failures {
		recent = recent[len(recent)-4*h.cfg.Failures:] // bounded: only the count up to Failures matters
	}
	h.failures[device] = recent
	if n := distinct(recent); n >= h.cfg.Failures && !h.sick[device] {
		h.sick[device] = true
		h.report(device, false)
		h.log.Warn("device marked unhealthy: AUTO places models on the next device until it is probed again",
			"device", device, "failures", n, "window", h.cfg.Window, "probe_after", h.cfg.ProbeAfter, "last", why)
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
		last := h.failures[device][len(h.failures[device])-1].at
		return fmt.Errorf("device %s is unhealthy (%d crashes or hangs within %s); it is tried again at %s: %w",
			device, distinct(h.failures[device]), h.cfg.Window, last.Add(h.cfg.ProbeAfter).Format(time.RFC3339), npu.ErrDeviceUnhealthy)
	}
	return nil
}

// probeDue: the sick device's last failure is ProbeAfter old.
func (h *health) probeDue(device string) bool {
	f := h.failures[device]
	return len(f) > 0 && h.now().Sub(f[len(f)-1].at) >= h.cfg.ProbeAfter
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
