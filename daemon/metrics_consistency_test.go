package daemon

import (
	"fmt"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/reqinfo"
)

// A scrape sees each request's series all or none: a dropped slow reader
// moves three counters, and no scrape may count it in one and not the
// others (the registry gathers its collectors concurrently, so a scrape
// taken while requests end would otherwise see them half recorded, as
// TestMetricsSlowConsumer once did in CI).
func TestMetricsScrapeSeesARequestWhole(t *testing.T) {
	m := newMetrics(sim.New(sim.Config{}))
	served := func(string) bool { return true }
	const writers, each = 4, 400
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				info := &reqinfo.Info{Model: "sim", Tenant: "anonymous", Err: npu.ErrSlowConsumer}
				m.requestEnded("/v1/chat/completions", 200, info, served)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for scrapes := 0; ; scrapes++ {
		select {
		case <-done:
			require.Positive(t, scrapes)
			requests, disconnects, dropped := slowReaderSeries(t, m)
			require.Equal(t, float64(writers*each), requests)
			require.Equal(t, requests, disconnects)
			require.Equal(t, requests, dropped)
			return
		default:
		}
		requests, disconnects, dropped := slowReaderSeries(t, m)
		require.Equal(t, requests, disconnects, "scrape %d", scrapes)
		require.Equal(t, requests, dropped, "scrape %d", scrapes)
	}
}

// slowReaderSeries gathers once and sums the three series a dropped slow
// reader moves.
func slowReaderSeries(t *testing.T, m *metrics) (requests, disconnects, dropped float64) {
	t.Helper()
	families, err := m.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			v := metric.GetCounter().GetValue()
			switch f.GetName() {
			case "npud_requests_total":
				if label(metric, "finished_reason") == "abort" {
					requests += v
				}
			case "npud_client_disconnects_total":
				if label(metric, "cause") == "slow_consumer" {
					disconnects += v
				}
			case "npud_slow_consumer_events_total":
				if label(metric, "action") == "dropped" {
					dropped += v
				}
			}
		}
	}
	return requests, disconnects, dropped
}

func label(metric *dto.Metric, name string) string {
	for _, l := range metric.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	panic(fmt.Sprintf("no label %q", name))
}
