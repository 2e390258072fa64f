package bench_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/cli/bench"
	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

func TestBenchAgainstNpudBothAPIs(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = 2 * time.Millisecond }, nil)
	for _, api := range []string{"openai", "ollama"} {
		t.Run(api, func(t *testing.T) {
			cfg := bench.Config{URL: srv.URL, API: api, Model: "sim", Concurrency: 3, Requests: 9, PromptTokens: 8, MaxTokens: 12}
			done := 0
			samples, elapsed, err := bench.Run(t.Context(), cfg, func(n int) { done = max(done, n) })
			require.NoError(t, err)
			require.Len(t, samples, 9)
			assert.Equal(t, 9, done)
			r := bench.Summarise(cfg, samples, elapsed)
			assert.Equal(t, 9, r.Succeeded, "%v", r.Errors)
			assert.Equal(t, 9*12, r.OutputTokens, "the server's own token count")
			// One gap between each pair of chunks: 11 per request, fewer when
			// the server coalesced tokens for a client that fell behind.
			assert.LessOrEqual(t, r.ITL.Count, 9*11)
			assert.Greater(t, r.ITL.Count, 9*5)
			assert.Greater(t, r.TTFT.P50, 0.0)
			assert.GreaterOrEqual(t, r.ITL.P50, 1.0, "the engine's 2 ms between tokens, seen by the client")
			assert.Greater(t, r.EndToEnd.P50, r.TTFT.P50)
			assert.Greater(t, r.TokensPerS, 0.0)
			var b strings.Builder
			r.WriteTable(&b)
			assert.Contains(t, b.String(), "TTFT")
			assert.Contains(t, b.String(), "ok 9")
		})
	}
}

func TestBenchErrorKinds(t *testing.T) {
	faults := func(r *npu.Request) sim.Fault {
		if strings.Contains(sim.PromptText(r), "abc") {
			return sim.Fault{ErrorAtToken: 3}
		}
		return sim.Fault{}
	}
	srv := daemontest.StartSim(t, nil, faults)
	cfg := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Concurrency: 1, Requests: 2, PromptTokens: 4, MaxTokens: 10}
	samples, _, err := bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	for _, s := range samples {
		assert.Equal(t, "stream_engine_error", s.Err)
	}
	cfg.Model = "missing"
	samples, _, err = bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, "http_404", samples[0].Err)

	// A server that ends streams without their terminator.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			fmt.Fprint(w, `{"response":"a","done":false}`+"\n")
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
	}))
	defer cut.Close()
	for _, api := range []string{"openai", "ollama"} {
		samples, _, err = bench.Run(t.Context(), bench.Config{URL: cut.URL, API: api, Concurrency: 1, Requests: 1}, nil)
		require.NoError(t, err)
		assert.Equal(t, "truncated", samples[0].Err, api)
	}
	samples, _, err = bench.Run(t.Context(), bench.Config{URL: "http://127.0.0.1:1", API: "openai", Concurrency: 1, Requests: 1}, nil)
	require.NoError(t, err)
	assert.Equal(t, "connect", samples[0].Err)
	_, _, err = bench.Run(t.Context(), bench.Config{API: "grpc", Concurrency: 1, Requests: 1}, nil)
	assert.Error(t, err)
}

func TestBenchDuration(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = time.Millisecond }, nil)
	cfg := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Concurrency: 2, Duration: 300 * time.Millisecond, MaxTokens: 5}
	start := time.Now()
	samples, _, err := bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.NotEmpty(t, samples)
	for _, s := range samples {
		assert.Empty(t, s.Err, "requests cut by the end of the run are not counted as failures")
	}
}

func TestSummarise(t *testing.T) {
	ms := time.Millisecond
	samples := []bench.Sample{
		{TTFT: 100 * ms, E2E: 190 * ms, Tokens: 10, Gaps: []time.Duration{10 * ms, 10 * ms}},
		{TTFT: 300 * ms, E2E: 390 * ms, Tokens: 10, Gaps: []time.Duration{30 * ms}},
		{Err: "http_503"}, {Err: "http_503"}, {Err: "timeout"},
	}
	r := bench.Summarise(bench.Config{Concurrency: 2}, samples, 2*time.Second)
	assert.Equal(t, 5, r.Requests)
	assert.Equal(t, 2, r.Succeeded)
	assert.Equal(t, map[string]int{"http_503": 2, "timeout": 1}, r.Errors)
	assert.Equal(t, 20, r.OutputTokens)
	assert.InDelta(t, 10.0, r.TokensPerS, 1e-9)
	assert.InDelta(t, 1.0, r.RequestsPerS, 1e-9)
	assert.Equal(t, 300.0, r.TTFT.Max)
	assert.Equal(t, 3, r.ITL.Count)
	assert.Equal(t, 30.0, r.ITL.Max)
	assert.InDelta(t, 10.0, r.TPOT.P50, 1e-9, "(190-100)/(10-1) ms")
	assert.Equal(t, 200.0, r.TTFT.Mean)
}

func TestPresets(t *testing.T) {
	for _, name := range []string{"quick", "standard", "soak"} {
		p, ok := bench.Preset(name)
		assert.True(t, ok)
		assert.Positive(t, p.Concurrency)
		assert.True(t, p.Requests > 0 || p.Duration > 0)
	}
	_, ok := bench.Preset("huge")
	assert.False(t, ok)
}

// Issue 18: the multi-turn workload sends each conversation's whole
// history back, turn after turn, and reports first and later turns apart,
// with the prompt tokens the server reused.
func TestBenchMultiTurn(t *testing.T) {
	srv := daemontest.StartSim(t, func(c *daemon.Config) { c.SimITL = time.Millisecond }, nil)
	cfg := bench.Config{URL: srv.URL, API: "openai", Model: "sim", Concurrency: 1, Requests: 6, PromptTokens: 8, MaxTokens: 6, Turns: 3}
	samples, elapsed, err := bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.Len(t, samples, 6)
	for i, s := range samples {
		assert.Equal(t, i%3+1, s.Turn, "two conversations of three turns")
	}
	r := bench.Summarise(cfg, samples, elapsed)
	assert.Equal(t, 6, r.Succeeded, "%v", r.Errors)
	assert.Equal(t, 2, r.TTFTFirst.Count)
	assert.Equal(t, 4, r.TTFTLater.Count)
	assert.Positive(t, r.CachedTokens, "later turns continued the conversation the engine held")
	var b strings.Builder
	r.WriteTable(&b)
	assert.Contains(t, b.String(), "TTFT turn 2+")

	// Each worker holds its own conversations: 2 workers, 7 requests of
	// 3-turn conversations are 4 and 3 turns, never one worker's 6.
	cfg.Concurrency, cfg.Requests = 2, 7
	samples, _, err = bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	turns := map[int]int{}
	for _, s := range samples {
		turns[s.Turn]++
	}
	assert.Equal(t, map[int]int{1: 3, 2: 2, 3: 2}, turns, "conversations of 3+1 and 3 turns")

	_, _, err = bench.Run(t.Context(), bench.Config{URL: srv.URL, API: "ollama", Concurrency: 1, Requests: 1, Turns: 2}, nil)
	assert.ErrorContains(t, err, "--turns needs --api openai")
}

// Issue 24, build 3: agent conversations start with a shared system
// message and a large task, then grow by a tool result and the answer
// each turn; the report gives later turns' prompt sizes as the server
// counted them.
func TestBenchAgentConversationsGrow(t *testing.T) {
	type message struct{ Role, Content string }
	var (
		mu     sync.Mutex
		bodies [][]message
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Messages []message }
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		words := 0
		for _, m := range body.Messages {
			words += len(strings.Fields(m.Content))
		}
		mu.Lock()
		bodies = append(bodies, body.Messages)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"done\"}}]}\n\n")
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", words)
	}))
	defer srv.Close()
	cfg := bench.Config{URL: srv.URL, API: "openai", Model: "m", Concurrency: 1, Requests: 3, Turns: 3,
		SystemTokens: 50, PromptTokens: 200, TurnTokens: 100, MaxTokens: 1}
	samples, elapsed, err := bench.Run(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.Len(t, bodies, 3)
	size := func(m message) int { return len(strings.Fields(m.Content)) }
	for turn, msgs := range bodies {
		assert.Equal(t, "system", msgs[0].Role)
		assert.Equal(t, bodies[0][0], msgs[0], "the same system message every turn")
		assert.Len(t, msgs, 2+2*turn, "system, then question and answer per earlier turn, then the new question")
		last := msgs[len(msgs)-1]
		if turn == 0 {
			assert.InDelta(t, 200, size(last), 10, "the task")
		} else {
			assert.InDelta(t, 100, size(last), 10, "a tool result")
			assert.Equal(t, bodies[turn-1], msgs[:len(msgs)-2], "the whole history sent back")
		}
	}
	r := bench.Summarise(cfg, samples, elapsed)
	assert.Equal(t, 2, r.TTFTLater.Count)
	assert.Greater(t, r.LaterPromptMax, r.LaterPromptMean, "the history grows")
	counted := func(msgs []message) int {
		n := 0
		for _, m := range msgs {
			n += size(m)
		}
		return n
	}
	assert.Equal(t, (counted(bodies[1])+counted(bodies[2]))/2, r.LaterPromptMean, "the server's counts of turns 2 and 3")
	assert.Equal(t, counted(bodies[2]), r.LaterPromptMax)
}
