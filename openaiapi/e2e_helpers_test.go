package openaiapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// TestMain checks that no test leaves a goroutine behind: every server is
// drained and every client transport closes its idle connections when its
// test ends, so nothing needs to be ignored.
func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// startSim serves daemontest.Defaults, adjusted by mutate, with a simulated
// engine using the config's timings and the given faults (both may be nil).
func startSim(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *daemontest.Server {
	t.Helper()
	cfg := daemontest.Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	return daemontest.Start(t, cfg, sim.New(sim.Config{
		TTFT: cfg.SimTTFT, ITL: cfg.SimITL, PromptTokenCost: cfg.SimPromptTokenCost, Faults: faults,
	}))
}

// activeStreams reads active_streams from GET /health.
func activeStreams(t *testing.T, hc *http.Client, base string) float64 {
	return daemontest.Health(t, hc, base)["active_streams"].(float64)
}

// queued reads queued from GET /health.
func queued(t *testing.T, hc *http.Client, base string) float64 {
	return daemontest.Health(t, hc, base)["queued"].(float64)
}

var waitFor = daemontest.Eventually

// userPrompt is the text the simulated model reads for one user message:
// [{user, "hi"}] reads "user: hi\n".
func userPrompt(content string) string { return "user: " + content + "\n" }

// prefix is the simulated answer cut to n tokens (n <= 0: the whole answer).
var prefix = sim.Prefix

// hogContent marks a request that holds the engine: it stalls before its
// second token until its client goes away.
const hogContent = "hog"

func isHog(r *npu.Request) bool { return len(r.Messages) > 0 && r.Messages[0].Content == hogContent }

// hogFaults stalls hog requests and injects other (may be nil) into the rest.
func hogFaults(other func(*npu.Request) sim.Fault) func(*npu.Request) sim.Fault {
	return func(r *npu.Request) sim.Fault {
		if isHog(r) {
			return sim.Fault{StallAtToken: 2}
		}
		if other != nil {
			return other(r)
		}
		return sim.Fault{}
	}
}

// startHog opens a stream that holds the engine (the server must use
// hogFaults) and returns once the engine runs it. release disconnects it;
// it also runs when the test ends.
func startHog(t *testing.T, hc *http.Client, base string) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"`+hogContent+`"}]}`))
	require.NoError(t, err)
	resp, err := hc.Do(req) // returns with the first token, which commits the 200
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			cancel()
			_ = resp.Body.Close()
		}
	}
	t.Cleanup(release)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	waitFor(t, func() bool { return activeStreams(t, hc, base) == 1 })
	return release
}
