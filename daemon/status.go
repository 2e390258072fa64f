package daemon

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	dto "github.com/prometheus/client_model/go"

	"github.com/npud/npud/npu"
)

// StatusPath is the live view of the daemon that the web console polls.
// It needs a key when keys are configured (any role): it names the loaded
// models and counts every tenant's work together, never per tenant.
const StatusPath = "/npud/v1/status"

type statusDevice struct {
	Name     string `json:"name"`
	FullName string `json:"full_name,omitempty"`
	Healthy  bool   `json:"healthy"`
}

type statusModel struct {
	ID            string `json:"id"`
	Device        string `json:"device"`
	ContextLength int    `json:"context_length"`
	Preloaded     bool   `json:"preloaded"`
	InUse         int    `json:"in_use"` // requests using it now
	// KeepAliveSeconds is what is left of the model's keep-alive; -1 when
	// it stays loaded until unloaded explicitly.
	KeepAliveSeconds int64 `json:"keep_alive_seconds"`
}

type statusLoading struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // "compiling for NPU (first time)", "loading the compiled model", "loading"
	FirstCompile bool   `json:"first_compile"`
	Seconds      int64  `json:"seconds"` // since the load started
}

// statusTotals are running totals since the start; a client takes the
// difference between two polls for rates and interval averages.
type statusTotals struct {
	TTFTSecondsSum        float64 `json:"ttft_seconds_sum"`
	TTFTCount             uint64  `json:"ttft_count"`
	InterTokenSecondsSum  float64 `json:"inter_token_seconds_sum"`
	InterTokenCount       uint64  `json:"inter_token_count"`
	CompletionTokens      float64 `json:"completion_tokens"`
	PromptTokens          float64 `json:"prompt_tokens"`
	GenerationRequests    float64 `json:"generation_requests"`
	EngineErrors          float64 `json:"engine_errors"`
	ClientDisconnects     float64 `json:"client_disconnects"`
	RateLimitedRequests   float64 `json:"rate_limited_requests"`
	ModelLoadSecondsSum   float64 `json:"model_load_seconds_sum"`
	ModelLoads            uint64  `json:"model_loads"`
	ConversationsContinue float64 `json:"conversations_continued"`
}

type statusReport struct {
	Status        string         `json:"status"` // ok or draining
	Version       string         `json:"version"`
	Engine        string         `json:"engine"`
	Simulated     bool           `json:"simulated"`
	Why           string         `json:"simulated_why,omitempty"`  // why the simulated engine serves
	EngineChanged *EngineChange  `json:"engine_changed,omitempty"` // auto started OpenVINO without a restart
	UptimeSeconds int64          `json:"uptime_seconds"`
	Devices       []statusDevice `json:"devices"`
	Models        []string       `json:"models"` // every model served
	Loaded        []statusModel  `json:"loaded"`
	// Loading lists the models being loaded: a first compile for an NPU
	// takes minutes.
	Loading []statusLoading `json:"loading"`
	Queued  int             `json:"queued"`
	Running int             `json:"running"`
	Streams int             `json:"active_streams"` // connected generation requests, queued or running
	Auth    bool            `json:"auth"`
	// WorkerRestarts counts the engine workers restarted after a crash or
	// hang; absent when the engine runs in the daemon.
	WorkerRestarts *int64       `json:"worker_restarts,omitempty"`
	Totals         statusTotals `json:"totals"`
	// Recent are the last generations that wrote text, oldest first, for
	// the console's charts (every tenant's; no prompt, no text).
	Recent []recentRequest `json:"recent"`
	Time   time.Time       `json:"time"`
}

func (s *Server) status(c *gin.Context) {
	engine := s.router.Engine()
	now := time.Now()
	report := statusReport{
		Status: "ok", Version: Version, Engine: engine.Name(), Simulated: engine.Simulated(),
		UptimeSeconds: int64(now.Sub(s.started) / time.Second),
		Devices:       []statusDevice{}, Models: []string{}, Loaded: []statusModel{}, Loading: []statusLoading{},
		Queued: s.router.Waiting(), Running: s.router.Running(),
		Auth: s.policy.Load().keys.enabled(), Time: now.UTC(), EngineChanged: s.engineChange(),
	}
	if report.Simulated {
		report.Why = s.simulatedWhy()
	}
	select {
	case <-s.draining:
		report.Status = "draining"
	default:
	}
	full := engine.DeviceNames()
	var health map[string]bool
	if w, ok := isolation(engine); ok {
		health = w.DeviceHealth() // crashes and hangs counted by the workers
		n := w.Restarts()
		report.WorkerRestarts = &n
	}
	for _, name := range deviceList(engine) {
		healthy, known := health[name]
		report.Devices = append(report.Devices, statusDevice{Name: name, FullName: full[name], Healthy: healthy || !known})
	}
	for _, m := range s.router.Models() {
		report.Models = append(report.Models, m.ID)
	}
	for _, lm := range s.router.Loaded() {
		left := int64(-1)
		if !lm.ExpiresAt.IsZero() {
			left = max(0, int64(lm.ExpiresAt.Sub(now)/time.Second))
		}
		report.Loaded = append(report.Loaded, statusModel{ID: lm.Model.ID, Device: s.router.DeviceOf(lm.Model.ID),
			ContextLength: lm.Model.ContextLength, Preloaded: lm.Preloaded, InUse: lm.InUse, KeepAliveSeconds: left})
	}
	for _, l := range s.router.Loading() {
		report.Loading = append(report.Loading, statusLoading{ID: l.Model, Status: l.Text(),
			FirstCompile: l.Compile == npu.CompileFirst, Seconds: int64(now.Sub(l.Since) / time.Second)})
	}
	report.Streams, report.Totals = s.metrics.totals()
	report.Recent = s.metrics.recent.list()
	c.JSON(http.StatusOK, report)
}

// totals sums the daemon's own metrics over every label, so the status
// shows what /metrics shows without naming any tenant.
func (m *metrics) totals() (streams int, t statusTotals) {
	families, err := m.Gather()
	if err != nil {
		return 0, t // a collector failed: the status still answers
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch name := f.GetName(); name {
			case "npud_time_to_first_token_seconds":
				t.TTFTSecondsSum += metric.GetHistogram().GetSampleSum()
				t.TTFTCount += metric.GetHistogram().GetSampleCount()
			case "npud_inter_token_latency_seconds":
				t.InterTokenSecondsSum += metric.GetHistogram().GetSampleSum()
				t.InterTokenCount += metric.GetHistogram().GetSampleCount()
			case "npud_model_load_seconds":
				t.ModelLoadSecondsSum += metric.GetHistogram().GetSampleSum()
				t.ModelLoads += metric.GetHistogram().GetSampleCount()
			case "npud_completion_tokens_total":
				t.CompletionTokens += metric.GetCounter().GetValue()
			case "npud_prompt_tokens_total":
				t.PromptTokens += metric.GetCounter().GetValue()
			case "npud_requests_total":
				t.GenerationRequests += metric.GetCounter().GetValue()
			case "npud_engine_errors_total":
				t.EngineErrors += metric.GetCounter().GetValue()
			case "npud_client_disconnects_total":
				t.ClientDisconnects += metric.GetCounter().GetValue()
			case "npud_rate_limited_total":
				t.RateLimitedRequests += metric.GetCounter().GetValue()
			case "npud_conversation_cache_total":
				if labelValue(metric, "result") == "continued" {
					t.ConversationsContinue += metric.GetCounter().GetValue()
				}
			case "npud_active_streams":
				streams += int(metric.GetGauge().GetValue())
			}
		}
	}
	return streams, t
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if strings.EqualFold(l.GetName(), name) {
			return l.GetValue()
		}
	}
	return ""
}
