package openaiapi_test

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/npud/npud/daemon/daemontest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// activeStreams reads active_streams from GET /health.
func activeStreams(t *testing.T, hc *http.Client, base string) float64 {
	return daemontest.Health(t, hc, base)["active_streams"].(float64)
}

var waitFor = daemontest.Eventually
