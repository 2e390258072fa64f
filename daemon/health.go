package daemon

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

type healthModel struct {
	ID            string `json:"id"`
	ContextLength int    `json:"context_length"`
	Device        string `json:"device,omitempty"` // where it is loaded, for engines that place models
}

type healthDevice struct {
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
}

type healthReport struct {
	Status    string `json:"status"` // "ok" or "draining"
	Engine    string `json:"engine"`
	Simulated bool   `json:"simulated"`
	// Why is why the simulated engine serves (no OpenVINO library, no
	// model, --engine sim), when it does.
	Why string `json:"simulated_why,omitempty"`
	// EngineChanged says what changed when --engine auto started serving
	// OpenVINO without a restart (after the first pull of a model).
	EngineChanged *EngineChange `json:"engine_changed,omitempty"`
	Models        []healthModel `json:"models"`
	ActiveStreams int           `json:"active_streams"` // generations the engine is running
	Queued        int           `json:"queued"`         // requests waiting for the engine
	UptimeSeconds int64         `json:"uptime_seconds"`
	// With the engine in worker processes: the restarts after faults, and
	// each device's health (AUTO avoids an unhealthy one).
	WorkerRestarts *int64         `json:"worker_restarts,omitempty"`
	Devices        []healthDevice `json:"devices,omitempty"`
	// Upstreams are the servers models are relayed to, and whether each
	// is in rotation.
	Upstreams []healthUpstream `json:"upstreams,omitempty"`
	Version   string           `json:"version"`
}

type healthUpstream struct {
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	Running int    `json:"running"` // generations relayed to it now
	Queued  int    `json:"queued"`
}

func (s *Server) health(c *gin.Context) {
	engine := s.router.Engine()
	report := healthReport{
		Status:        "ok",
		Engine:        engine.Name(),
		Simulated:     engine.Simulated(),
		Models:        []healthModel{},
		ActiveStreams: s.router.Running(),
		Queued:        s.router.Waiting(),
		UptimeSeconds: int64(time.Since(s.started) / time.Second),
		Version:       Version,
		EngineChanged: s.engineChange(),
	}
	if report.Simulated {
		report.Engine += " (simulated: no inference)"
		report.Why = s.simulatedWhy()
	}
	for _, m := range s.router.Models() {
		report.Models = append(report.Models, healthModel{ID: m.ID, ContextLength: m.ContextLength, Device: s.router.Placement(m.ID)})
	}
	if w, ok := isolation(engine); ok {
		n := w.Restarts()
		report.WorkerRestarts = &n
		for name, healthy := range w.DeviceHealth() {
			report.Devices = append(report.Devices, healthDevice{Name: name, Healthy: healthy})
		}
		slices.SortFunc(report.Devices, func(a, b healthDevice) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, up := range s.router.Upstreams() {
		report.Upstreams = append(report.Upstreams, healthUpstream{Name: up.Name, Healthy: up.InRotation(),
			Running: up.Pool.Running(), Queued: up.Pool.Waiting()})
	}
	status := http.StatusOK
	select {
	case <-s.draining:
		report.Status, status = "draining", http.StatusServiceUnavailable
	default:
	}
	c.JSON(status, report)
}
