package openaiapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type healthReport struct {
	Status        string `json:"status"`
	ActiveStreams int    `json:"active_streams"`
	Queued        int    `json:"queued"`
}

func health(t *testing.T, hc *http.Client, base string) healthReport {
	t.Helper()
	resp, err := hc.Get(base + "/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	var h healthReport
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return h
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
