//go:build cgo

package daemon_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
)

// Issue 25 item 5: one tenant's poison request, through real worker
// processes. Its first crash is retryable (it may be bad luck); its second
// is engine_crashed_on_request, a 4xx that SDKs do not retry, and later
// copies are refused without reaching a worker. The tenant whose requests
// keep crashing workers is throttled; another tenant is served; the device
// is not marked unhealthy by one request crashing twice, although the
// threshold is two faults.
func TestPoisonRequestIsRefusedAndHurtsNobodyElse(t *testing.T) {
	bob := daemon.APIKey{Name: "bob", Key: "sk-bob-0123456789abc"}
	srv, _ := startWorkers(t, "CPU", func(c *daemon.Config) {
		c.APIKeys = []daemon.APIKey{alice, bob}
		c.DeviceFailures, c.DeviceFailureWindow, c.DeviceProbeAfter = 2, time.Hour, time.Hour
	}, "tiny")
	c := daemontest.NewClient(t, srv.URL)
	as := func(k daemon.APIKey) []string { return []string{"Authorization", "Bearer " + k.Key} }
	poison := `{"model":"tiny","max_tokens":50,"messages":[{"role":"user","content":"OVTEST_CRASH here"}]}`
	answer := func(key daemon.APIKey, body string) (int, string, string) {
		t.Helper()
		resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", body, as(key)...)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(raw, &e)
		return resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After")
	}

	status, code, retry := answer(alice, poison)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "engine_crashed", code)
	assert.NotEmpty(t, retry, "the first crash is retryable")

	status, code, retry = answer(alice, poison) // an SDK's automatic retry
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, "engine_crashed_on_request", code)
	assert.Empty(t, retry, "not retryable")
	assert.Contains(t, daemontest.Health(t, c.HTTP, srv.URL)["devices"], map[string]any{"name": "CPU", "healthy": true},
		"one request crashing twice is no sick device")

	status, code, _ = answer(bob, poison) // the same request from anyone
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Equal(t, "engine_crashed_on_request", code)
	h := daemontest.Health(t, c.HTTP, srv.URL)
	assert.EqualValues(t, 2, h["worker_restarts"], "refused without reaching a worker")

	hello := `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hello"}]}`
	status, code, retry = answer(alice, hello)
	assert.Equal(t, http.StatusTooManyRequests, status, "alice's requests keep crashing workers")
	assert.Equal(t, "crash_throttled", code)
	assert.NotEmpty(t, retry)

	status, code, _ = answer(bob, hello)
	require.Equal(t, http.StatusOK, status, "bob is served: %s", code)
}
