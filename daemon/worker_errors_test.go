//go:build cgo

package daemon_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 28 defect 2: an engine failure inside a worker process (the test
// library's generate fails on OVTEST_FAIL) reaches the client as
// engine_error, not internal_error, and npud_engine_errors_total counts
// it, as for an engine in the daemon's process.
func TestWorkerEngineErrorsKeepTheirClass(t *testing.T) {
	srv, _ := startWorkers(t, "CPU", nil, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"OVTEST_FAIL now"}]}`)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s", raw)
	_, code := openAIError(t, raw)
	assert.Equal(t, "engine_error", code)
	var counted float64
	for series, v := range scrapeMetrics(t, srv.URL) {
		if strings.HasPrefix(series, "npud_engine_errors_total{") && strings.Contains(series, `kind="engine"`) && strings.Contains(series, `model="tiny"`) {
			counted += v
		}
	}
	require.EqualValues(t, 1, counted, "npud_engine_errors_total counts the worker's engine failure")
}
