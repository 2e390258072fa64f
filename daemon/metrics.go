package daemon

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
)

// Latency buckets reach a minute: on an NPU a long prompt's prefill takes
// seconds, and a histogram that tops out at 10 s would hide it.
var (
	latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120}
	gapBuckets     = []float64{.001, .0025, .005, .01, .02, .03, .05, .075, .1, .15, .25, .5, 1, 2.5, 5}
	loadBuckets    = []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// A real-time factor is the engine's time over the audio's: below 1
	// is faster than real time (Whisper on an NPU runs far below it).
	rtfBuckets = []float64{.01, .025, .05, .1, .2, .3, .5, .75, 1, 1.5, 2, 5}
)

// metrics is npud's Prometheus instrumentation, on its own registry (no
// global state). Labels are bounded: models and devices the engine serves,
// route templates, tenants named by API keys.
type metrics struct {
	registry *prometheus.Registry
	// recording makes a scrape see each request's series all or none:
	// requests record under the shared side, a gather takes the exclusive
	// one (the registry reads its collectors concurrently, so ordering the
	// increments alone would not do).
	recording sync.RWMutex

	ttft, e2e, queueWait, interToken, load *prometheus.HistogramVec
	realTimeFactor                         *prometheus.HistogramVec
	audioSeconds                           *prometheus.CounterVec

	requests, promptTokens, completionTokens *prometheus.CounterVec
	structured                               *prometheus.CounterVec
	disconnects, slowConsumer, engineErrors  *prometheus.CounterVec
	rateLimitedTotal                         *prometheus.CounterVec
	prefillTokens, conversationCache         *prometheus.CounterVec
	workerRestarts                           *prometheus.CounterVec
	activeStreams, deviceHealthy             *prometheus.GaugeVec
	build, devices                           *prometheus.GaugeVec // what the engine is and runs on
	recent                                   requestHistory       // the last generations, for the console
}

// newMetrics returns the instrumentation for an engine; watch then adds
// the gauges read from its router (whose pools need the metrics as observer
// first).
func newMetrics(engine npu.Engine) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m.ttft = hist("npud_time_to_first_token_seconds", "Time from request arrival to the first text written to the client.", latencyBuckets, "model", "device", "route", "tenant")
	m.e2e = hist("npud_request_duration_seconds", "Time from request arrival to the end of the response, for generation requests.", latencyBuckets, "model", "device", "route", "tenant")
	m.queueWait = hist("npud_queue_wait_seconds", "Time a generation waited for the engine (excluding model load).", latencyBuckets, "model")
	m.interToken = hist("npud_inter_token_latency_seconds", "Time between consecutive pieces of text handed to a client's writer.", gapBuckets, "model", "device")
	m.load = hist("npud_model_load_seconds", "Time to load (compile) a model on its device.", loadBuckets, "model", "device")
	m.realTimeFactor = hist("npud_transcription_real_time_factor", "A transcription's time on the engine over the audio's duration (below 1: faster than real time).", rtfBuckets, "model", "device")
	m.audioSeconds = counter("npud_audio_seconds_total", "Seconds of audio transcribed or translated (task) by the engine.", "model", "task")
	m.requests = counter("npud_requests_total", "Generation requests by how they finished: stop, length, abort (the client left or could not keep up) or error.", "model", "route", "tenant", "finished_reason")
	m.promptTokens = counter("npud_prompt_tokens_total", "Prompt tokens of finished generations.", "model", "tenant")
	m.completionTokens = counter("npud_completion_tokens_total", "Completion tokens of finished generations.", "model", "tenant")
	m.disconnects = counter("npud_client_disconnects_total", "Streams that ended without the client reading the end: client_closed, write_failed, slow_consumer, shutdown.", "route", "cause")
	m.slowConsumer = counter("npud_slow_consumer_events_total", "Slow readers: chunks coalesced while the writer was behind, and streams dropped at the pending-bytes limit.", "route", "action")
	m.engineErrors = counter("npud_engine_errors_total", "Engine failures by kind: engine (a failed call), token_timeout, panic.", "model", "device", "kind")
	m.rateLimitedTotal = counter("npud_rate_limited_total", "Requests refused with 429: rate (requests per minute) or streams (concurrent cap).", "tenant", "reason")
	m.prefillTokens = counter("npud_prefill_tokens_total", "Prompt tokens of finished generations by what the engine did with them: prefilled, or reused from its cache of the conversation's earlier turn.", "model", "kind")
	m.conversationCache = counter("npud_conversation_cache_total", "Conversation requests by what they found in their model's cache when they got the engine: continued (only new tokens prefilled), new (nothing cached), switched (another conversation was cached and is reset).", "model", "result")
	m.structured = counter("npud_structured_output_total", "Structured answers the engine held to their schema: resumed counts each time it resumed one after the schema refused what the model wrote; failed counts those it could not finish (structured_output_failed).", "model", "outcome")
	m.workerRestarts = counter("npud_worker_restarts_total", "Engine worker processes restarted after a fault: crashed (a segfault, an abort, an OOM kill) or hung (killed by the watchdog).", "model", "reason")
	m.deviceHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "npud_device_healthy", Help: "1 while a device is healthy, 0 after too many crashes or hangs on it (AUTO then uses the next device)."}, []string{"device"})
	m.activeStreams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "npud_active_streams", Help: "Generation requests connected now, queued or running; on the WebSocket's route, its generations."}, []string{"route"})

	m.build = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "npud_build_info", Help: "Always 1: the npud version, engine and Go version."}, []string{"version", "engine", "goversion"})
	m.devices = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "npud_device_info", Help: "Always 1 per device the engine can use, with its full name."}, []string{"device", "name"})
	m.describeEngine(engine)
	m.registry.MustRegister(m.ttft, m.e2e, m.queueWait, m.interToken, m.load, m.requests, m.promptTokens,
		m.completionTokens, m.disconnects, m.slowConsumer, m.engineErrors, m.rateLimitedTotal, m.activeStreams,
		m.prefillTokens, m.conversationCache, m.workerRestarts, m.structured, m.deviceHealthy, m.realTimeFactor, m.audioSeconds,
		m.build, m.devices, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// describeEngine sets what the engine is and which devices it runs on;
// again when --engine auto starts OpenVINO without a restart.
func (m *metrics) describeEngine(engine npu.Engine) {
	m.build.Reset()
	m.build.WithLabelValues(Version, engine.Name(), runtime.Version()).Set(1)
	m.devices.Reset()
	if engine.Simulated() {
		m.devices.WithLabelValues("simulated", "npud simulated engine (no inference)").Set(1)
	}
	for name, full := range engine.DeviceNames() {
		m.devices.WithLabelValues(name, full).Set(1)
	}
}

// watch adds the gauges read from router at each scrape.
func (m *metrics) watch(router *serve.Router) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "npud_queue_depth", Help: "Requests waiting for the engine."},
			func() float64 { return float64(router.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "npud_engine_busy", Help: "Generations the engine is running now."},
			func() float64 { return float64(router.Running()) }))
}

// Gather implements prometheus.Gatherer: the registry's series, between
// requests' recordings.
func (m *metrics) Gather() ([]*dto.MetricFamily, error) {
	m.recording.Lock()
	defer m.recording.Unlock()
	return m.registry.Gather()
}

// handler serves /metrics.
func (m *metrics) handler() gin.HandlerFunc {
	h := promhttp.HandlerFor(m, promhttp.HandlerOpts{})
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}

// ModelLoaded implements npu.Observer.
func (m *metrics) ModelLoaded(model, device string, took time.Duration) {
	m.load.WithLabelValues(model, device).Observe(took.Seconds())
}

// Prefill implements npu.Observer. The model is one a pool served.
func (m *metrics) Prefill(model string, cache npu.CacheResult, prefilled, reused int) {
	m.prefillTokens.WithLabelValues(model, "prefilled").Add(float64(prefilled))
	m.prefillTokens.WithLabelValues(model, "reused").Add(float64(reused))
	if cache != npu.CacheNone {
		m.conversationCache.WithLabelValues(model, string(cache)).Inc()
	}
}

// WorkerRestarted implements worker.Observer.
func (m *metrics) WorkerRestarted(model, reason string) {
	m.workerRestarts.WithLabelValues(model, reason).Inc()
}

// DeviceHealth implements worker.Observer.
func (m *metrics) DeviceHealth(device string, healthy bool) {
	v := 0.0
	if healthy {
		v = 1
	}
	m.deviceHealthy.WithLabelValues(device).Set(v)
}

// TokenGap implements npu.Observer.
func (m *metrics) TokenGap(model, device string, gap time.Duration) {
	m.interToken.WithLabelValues(model, device).Observe(gap.Seconds())
}

// Refused implements npu.Observer: a request over its tenant's rate, or
// work over its stream cap, on any API or the WebSocket, is a 429.
func (m *metrics) Refused(tenant string, err error) {
	switch {
	case errors.Is(err, npu.ErrTooManyStreams):
		m.rateLimitedTotal.WithLabelValues(tenant, "streams").Inc()
	case errors.Is(err, npu.ErrRateLimited):
		m.rateLimitedTotal.WithLabelValues(tenant, "rate").Inc()
	}
}

// streamOpened counts a connected generation request until done is called.
func (m *metrics) streamOpened(route string) (done func()) {
	g := m.activeStreams.WithLabelValues(route)
	g.Inc()
	return g.Dec
}

// requestEnded records a finished generation request from what its
// handler learned; it runs once per request, beside the access log.
func (m *metrics) requestEnded(route string, status int, info *reqinfo.Info, served func(string) bool) {
	model := info.Model
	if model == "" || !served(model) {
		// Refused before the body named one, or named one nobody serves:
		// a label per made-up name would let any client grow every series
		// (and /metrics) without bound.
		model = "unknown"
	}
	var st npu.StreamStats
	if info.Stream != nil {
		st = info.Stream.Stats()
		model = st.Model // the served name, not an alias
	}
	reason, cause := outcome(status, info)
	m.recording.RLock()
	defer m.recording.RUnlock()
	defer m.requests.WithLabelValues(model, route, info.Tenant, reason).Inc()
	if cause != "" {
		m.disconnects.WithLabelValues(route, cause).Inc()
	}
	if cause == "slow_consumer" {
		m.slowConsumer.WithLabelValues(route, "dropped").Inc()
	}
	if st.Coalesced > 0 {
		m.slowConsumer.WithLabelValues(route, "coalesced").Add(float64(st.Coalesced))
	}
	if info.Stream == nil {
		return // refused before the engine was involved
	}
	if info.TTFT > 0 {
		m.ttft.WithLabelValues(model, st.Device, route, info.Tenant).Observe(info.TTFT.Seconds())
	}
	end := time.Now()
	m.e2e.WithLabelValues(model, st.Device, route, info.Tenant).Observe(end.Sub(info.Start).Seconds())
	m.recent.add(model, info, end)
}

// GenerationEnded implements npu.Observer: what a generation cost the
// engine is counted once per generation, by its pool, whichever
// protocol started it and however many clients read it.
func (m *metrics) GenerationEnded(g npu.GenerationReport) {
	if kind := engineErrorKind(g.Err); kind != "" {
		m.engineErrors.WithLabelValues(g.Model, g.Device, kind).Inc()
	}
	if errors.Is(g.Err, npu.ErrStructuredOutput) {
		m.structured.WithLabelValues(g.Model, "failed").Inc()
	}
	if g.Device == "" {
		return // it never reached the engine
	}
	m.queueWait.WithLabelValues(g.Model).Observe(g.Queue.Seconds())
	if g.Err == nil && g.Result.FormatResumes > 0 {
		m.structured.WithLabelValues(g.Model, "resumed").Add(float64(g.Result.FormatResumes))
	}
	if g.Err == nil {
		m.promptTokens.WithLabelValues(g.Model, g.Tenant).Add(float64(g.Result.PromptTokens))
		m.completionTokens.WithLabelValues(g.Model, g.Tenant).Add(float64(g.Result.CompletionTokens))
	}
}

// TranscriptionEnded implements npu.Observer: the audio the
// engine got through, and how fast, once per transcription; a failure
// counts as an engine error as a generation's does.
func (m *metrics) TranscriptionEnded(t npu.TranscriptionReport) {
	if kind := engineErrorKind(t.Err); kind != "" {
		m.engineErrors.WithLabelValues(t.Model, t.Device, kind).Inc()
	}
	if t.Err != nil {
		return
	}
	m.recording.RLock()
	defer m.recording.RUnlock()
	m.audioSeconds.WithLabelValues(t.Model, t.Task).Add(t.AudioSeconds)
	m.realTimeFactor.WithLabelValues(t.Model, t.Device).Observe(t.RealTimeFactor())
}

// outcome classifies a generation request: its finished_reason and, for a
// stream the client did not read to its end, the disconnect cause.
func outcome(status int, info *reqinfo.Info) (reason, cause string) {
	err := info.Err
	switch {
	case err == nil && status < 400 && (info.FinishReason == "stop" || info.FinishReason == "length"):
		return info.FinishReason, ""
	case errors.Is(err, reqinfo.ErrWrite):
		return "abort", "write_failed"
	case errors.Is(err, npu.ErrSlowConsumer):
		return "abort", "slow_consumer"
	case errors.Is(err, npu.ErrClientGone) || status == errclass.StatusClientClosed:
		return "abort", "client_closed"
	case errors.Is(err, npu.ErrShuttingDown) && status < 400:
		return "error", "shutdown" // the drain ended a stream already under way
	case err == nil && status < 400:
		return "stop", "" // a load/unload request, or an answer without a reason
	}
	return "error", ""
}

// engineErrorKind names an engine failure, or "" for other errors.
func engineErrorKind(err error) string {
	var engineErr *npu.EngineError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, npu.ErrTokenTimeout):
		return "token_timeout"
	case errors.As(err, &engineErr):
		if errors.Is(err, npu.ErrPanic) {
			return "panic"
		}
		return "engine"
	}
	return ""
}

// servesModel reports whether name (or an alias of it) is a model the
// router serves: only those become metric labels.
func (s *Server) servesModel(name string) bool {
	_, err := s.router.Model(name)
	return err == nil
}
