package wsapi_test

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
)

// TestMain checks that no test leaks a goroutine: every connection,
// relay and journal pump ends with its test.
func TestMain(m *testing.M) {
	daemontest.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

var (
	startSim = daemontest.StartSim
	waitFor  = daemontest.Eventually
)

// userPrompt is the text the simulated model reads for one user message.
func userPrompt(content string) string { return "user: " + content + "\n" }

// prefix is the simulated answer cut to n tokens (n <= 0: the whole answer).
var prefix = sim.Prefix

// activeStreams reads active_streams from GET /health.
func activeStreams(t *testing.T, hc *http.Client, base string) float64 {
	return daemontest.Health(t, hc, base)["active_streams"].(float64)
}
