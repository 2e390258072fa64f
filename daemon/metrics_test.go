package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// scrape reads /metrics into series → value, where a series is written as
// Prometheus prints it: name{label="value",...} with labels sorted.
type scrape map[string]float64

func scrapeMetrics(t *testing.T, base string, header ...string) scrape {
	t.Helper()
	resp, raw := daemontest.NewClient(t, base).Do(t, "GET", "/metrics", "", header...)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	out := scrape{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// sum adds the series of name whose labels include every pair given.
func (s scrape) sum(name string, labels ...string) float64 {
	var total float64
	for series, v := range s {
		base, rest, _ := strings.Cut(series, "{")
		if base != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(rest, labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		if match {
			total += v
		}
	}
	return total
}

func TestMetricsMoveWithEachEvent(t *testing.T) {
	faults := func(r *npu.Request) sim.Fault {
		switch p := sim.PromptText(r); {
		case strings.Contains(p, "fail"):
			return sim.Fault{ErrorAtToken: 2}
		case strings.Contains(p, "stall"):
			return sim.Fault{StallAtToken: 2}
		}
		return sim.Fault{}
	}
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.TokenTimeout = 300 * time.Millisecond
		c.SimITL = 2 * time.Millisecond
	}, faults)
	c := daemontest.NewClient(t, srv.URL)
	chat := func(prompt, extra string) string {
		return `{"model":"sim","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]` + extra + `}`
	}
	before := scrapeMetrics(t, srv.URL)
	assert.Equal(t, 1.0, before.sum("npud_build_info", "engine", "sim", "version", daemon.Version))
	assert.Equal(t, 1.0, before.sum("npud_device_info", "device", "simulated"))
	assert.Zero(t, before.sum("npud_requests_total"))

	// A stream that ends by itself, one cut by max_tokens, one on Ollama.
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", chat("hello there", `,"stop":["zzzz"]`))
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, "POST", "/v1/chat/completions", chat("hello", `,"max_tokens":3`))
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, "POST", "/api/generate", `{"model":"sim","prompt":"hi","options":{"num_predict":4}}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	// An engine error mid-stream, and a stall past the token timeout.
	_, raw = c.Do(t, "POST", "/v1/chat/completions", chat("fail", ""))
	assert.Contains(t, string(raw), "engine_error")
	_, raw = c.Do(t, "POST", "/v1/chat/completions", chat("stall", ""))
	assert.Contains(t, string(raw), "token_timeout")

	var m scrape
	// A generation's end is reported when the engine returns, which for the
	// stalled one comes after its client got the token_timeout error.
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_requests_total") == 5 && m.sum("npud_engine_errors_total", "kind", "token_timeout") == 1
	})
	chatRoute := []string{"route", "/v1/chat/completions", "model", "sim", "tenant", "anonymous"}
	assert.Equal(t, 1.0, m.sum("npud_requests_total", append(chatRoute, "finished_reason", "stop")...))
	assert.Equal(t, 1.0, m.sum("npud_requests_total", append(chatRoute, "finished_reason", "length")...))
	assert.Equal(t, 2.0, m.sum("npud_requests_total", append(chatRoute, "finished_reason", "error")...))
	assert.Equal(t, 1.0, m.sum("npud_requests_total", "route", "/api/generate", "finished_reason", "length"))
	assert.Equal(t, 1.0, m.sum("npud_engine_errors_total", "kind", "engine", "model", "sim", "device", "simulated"))
	assert.Equal(t, 1.0, m.sum("npud_engine_errors_total", "kind", "token_timeout"))
	assert.Equal(t, 5.0, m.sum("npud_time_to_first_token_seconds_count"), "every stream produced text before it ended")
	assert.Equal(t, 5.0, m.sum("npud_request_duration_seconds_count"))
	assert.Equal(t, 5.0, m.sum("npud_queue_wait_seconds_count", "model", "sim"), "every request the engine took")
	assert.Greater(t, m.sum("npud_completion_tokens_total", "model", "sim"), 7.0, "3 + 4 + the stop stream's")
	assert.Greater(t, m.sum("npud_prompt_tokens_total", "tenant", "anonymous"), 0.0)
	assert.Greater(t, m.sum("npud_inter_token_latency_seconds_count", "model", "sim", "device", "simulated"), 5.0)
	assert.Equal(t, 1.0, m.sum("npud_model_load_seconds_count", "model", "sim"), "loaded once, then kept")
	assert.Zero(t, m.sum("npud_client_disconnects_total"))
	daemontest.Eventually(t, func() bool { return scrapeMetrics(t, srv.URL).sum("npud_active_streams") == 0 })
}

func TestMetricsCompletionTokensMatchTheStream(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"count me"}],"max_tokens":9}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"completion_tokens":9`)
	daemontest.Eventually(t, func() bool {
		return scrapeMetrics(t, srv.URL).sum("npud_completion_tokens_total", "model", "sim", "tenant", "anonymous") == 9
	})
}

func TestMetricsGaugesAndDisconnects(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = 20 * time.Millisecond }, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	open := func(ctx context.Context) *http.Response {
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/chat",
			strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":1000}}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	running := open(ctx)
	defer running.Body.Close()
	queuedCtx, cancelQueued := context.WithCancel(t.Context())
	defer cancelQueued()
	go func() {
		// Headers arrive with the first heartbeat or token only; do not wait.
		if resp, err := http.DefaultClient.Do(mustRequest(t, queuedCtx, srv.URL)); err == nil {
			resp.Body.Close()
		}
	}()
	var m scrape
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_active_streams", "route", "/api/chat") == 2 && m.sum("npud_queue_depth") == 1
	})
	assert.Equal(t, 1.0, m.sum("npud_engine_busy"))

	// The client leaves mid-stream, and the queued one leaves too.
	_, _ = running.Body.Read(make([]byte, 64))
	cancel()
	cancelQueued()
	// The gauges come down as the handlers and the router finish, just
	// after the counters are taken.
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_client_disconnects_total", "route", "/api/chat", "cause", "client_closed") == 2 &&
			m.sum("npud_active_streams") == 0 && m.sum("npud_queue_depth") == 0
	})
	assert.Equal(t, 2.0, m.sum("npud_requests_total", "route", "/api/chat", "finished_reason", "abort"))
}

func mustRequest(t *testing.T, ctx context.Context, base string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/chat",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"queued"}]}`))
	require.NoError(t, err)
	return req
}

// flood produces far more text than socket buffers hold, as fast as it can.
type flood struct{ npu.Unsupported }

func (flood) Name() string           { return "flood" }
func (flood) Simulated() bool        { return true }
func (flood) Describe() npu.Features { return npu.Features{} }
func (flood) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "sim", OwnedBy: "test", ContextLength: 1 << 20}}
}
func (flood) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	chunk := strings.Repeat("x", 1024)
	for i := range 20000 {
		if sink(chunk) != npu.Running {
			return npu.Result{FinishReason: npu.FinishStop, CompletionTokens: i + 1}, nil
		}
	}
	return npu.Result{FinishReason: npu.FinishStop, CompletionTokens: 20000}, nil
}

func TestMetricsSlowConsumer(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.MaxPendingBytes = 64 << 10
	srv := daemontest.Start(t, cfg, flood{})
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	// Read nothing until the server gave up on this reader.
	var m scrape
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_requests_total", "finished_reason", "abort") == 1
	})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(raw), "slow_consumer", "the stream still ends with its error event")
	assert.Greater(t, m.sum("npud_slow_consumer_events_total", "route", "/v1/chat/completions", "action", "coalesced"), 0.0)
	assert.Equal(t, 1.0, m.sum("npud_client_disconnects_total", "cause", "slow_consumer"))
	assert.Equal(t, 1.0, m.sum("npud_slow_consumer_events_total", "action", "dropped"))
}

func TestMetricsRateLimitsAndTenants(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice, ops}
		c.RateLimit, c.RateBurst = 1, 1
	}, nil)
	c := daemontest.NewClient(t, srv.URL)
	for range 3 {
		c.Do(t, "POST", "/v1/chat/completions", tinyChat, "Authorization", "Bearer "+alice.Key)
	}
	var m scrape
	daemontest.Eventually(t, func() bool { // recorded as each request's handler returns
		m = scrapeMetrics(t, srv.URL, "Authorization", "Bearer "+ops.Key)
		return m.sum("npud_requests_total", "tenant", "alice") == 1
	})
	assert.Equal(t, 2.0, m.sum("npud_rate_limited_total", "tenant", "alice", "reason", "rate"))
	assert.Equal(t, 1.0, m.sum("npud_requests_total", "tenant", "alice", "finished_reason", "length"))
	assert.Zero(t, m.sum("npud_requests_total", "tenant", "ops"))
}

func TestMetricsModelReloadIsALoad(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	resp, raw = c.Do(t, "POST", "/admin/reload", `{"model":"sim"}`)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	assert.Equal(t, 2.0, scrapeMetrics(t, srv.URL).sum("npud_model_load_seconds_count", "model", "sim", "device", "simulated"),
		"the first reload loads, the second reloads")
}

// Issue 12, item 6: a model name only becomes a label when npud serves it;
// requests naming made-up models share "unknown", so a client cannot grow
// every series (and /metrics) with names of its choosing.
func TestMetricsLabelOnlyServedModels(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	for i := range 5 {
		name := fmt.Sprintf("made-up-%d-%s", i, strings.Repeat("x", 200))
		resp, _ := c.Do(t, "POST", "/v1/chat/completions", `{"model":"`+name+`","messages":[{"role":"user","content":"hi"}]}`)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, _ = c.Do(t, "POST", "/api/generate", `{"model":"`+name+`","prompt":"hi"}`)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
	resp, _ := c.Do(t, "POST", "/v1/chat/completions", tinyChat)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m scrape
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_requests_total", "model", "unknown") == 10 && m.sum("npud_requests_total", "model", "sim") == 1
	})
	for series := range m {
		assert.NotContains(t, series, "made-up", "no label for a model nobody serves")
	}
}

// Issue 18: what the conversation cache did shows in the metrics: prompt
// tokens prefilled and reused, and each conversation request's cache
// result.
func TestMetricsConversationCache(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	turn1 := `{"model":"sim","max_tokens":4,"messages":[{"role":"user","content":"first question"}]}`
	resp, raw := c.Do(t, "POST", "/v1/chat/completions", turn1)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	answer, err := json.Marshal(out.Choices[0].Message.Content)
	require.NoError(t, err)
	turn2 := `{"model":"sim","max_tokens":4,"messages":[{"role":"user","content":"first question"},{"role":"assistant","content":` +
		string(answer) + `},{"role":"user","content":"and the next"}]}`
	resp, raw = c.Do(t, "POST", "/v1/chat/completions", turn2)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)

	m := scrapeMetrics(t, srv.URL)
	assert.Equal(t, 1.0, m.sum("npud_conversation_cache_total", "model", "sim", "result", "new"))
	assert.Equal(t, 1.0, m.sum("npud_conversation_cache_total", "model", "sim", "result", "continued"))
	assert.Positive(t, m.sum("npud_prefill_tokens_total", "model", "sim", "kind", "reused"))
	assert.Positive(t, m.sum("npud_prefill_tokens_total", "model", "sim", "kind", "prefilled"))
}

// panickingEngine panics in every generation.
type panickingEngine struct{ npu.Engine }

func (panickingEngine) Generate(context.Context, *npu.Request, npu.Sink) (npu.Result, error) {
	panic("the engine broke")
}

// Issue 13: a panic is told apart by its type (npu.ErrPanic), not by a
// word in the message: a model that failed with "panic" in its error text
// is an ordinary engine error.
func TestMetricsCountPanicsByType(t *testing.T) {
	srv := daemontest.Start(t, daemontest.Defaults(t), panickingEngine{sim.New(sim.Config{})})
	c := daemontest.NewClient(t, srv.URL)
	_, raw := c.Do(t, "POST", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}]}`)
	assert.Contains(t, string(raw), `"code":"engine_panic"`)
	var m scrape
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_engine_errors_total") == 1
	})
	assert.Equal(t, 1.0, m.sum("npud_engine_errors_total", "kind", "panic"))
}

// Issue 13: what a generation cost the engine is counted once, by the
// router: two clients reading one generation (a join by Idempotency-Key)
// count its tokens once.
func TestMetricsCountAGenerationOnceWhateverReadsIt(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	body := `{"model":"sim","max_tokens":5,"messages":[{"role":"user","content":"once"}]}`
	for range 2 {
		resp, raw := c.Do(t, "POST", "/v1/chat/completions", body, "Idempotency-Key", "count-once")
		require.Equal(t, 200, resp.StatusCode, "%s", raw)
	}
	var m scrape
	daemontest.Eventually(t, func() bool {
		m = scrapeMetrics(t, srv.URL)
		return m.sum("npud_requests_total") == 2
	})
	assert.Equal(t, 5.0, m.sum("npud_completion_tokens_total", "model", "sim"), "one generation of 5 tokens, read twice")
	assert.Equal(t, 1.0, m.sum("npud_queue_wait_seconds_count", "model", "sim"))
}
