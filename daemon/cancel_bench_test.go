package daemon_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
)

// tickEngine emits a token every itl and reports when its sink first
// answered Cancel: the moment the engine was told.
type tickEngine struct {
	npu.Unsupported
	itl  time.Duration
	told chan time.Time
}

func (e *tickEngine) Name() string           { return "tick" }
func (e *tickEngine) Simulated() bool        { return true }
func (e *tickEngine) Describe() npu.Features { return npu.Features{} }
func (e *tickEngine) Models() []npu.ModelInfo {
	return []npu.ModelInfo{{ID: "sim", OwnedBy: "test", ContextLength: 1 << 20}}
}
func (e *tickEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	t := time.NewTicker(e.itl)
	defer t.Stop()
	for n := 1; ; n++ {
		if sink(" tok") == npu.Cancel {
			e.told <- time.Now()
			return npu.Result{CompletionTokens: n}, context.Canceled
		}
		<-t.C
	}
}

// BenchmarkCancellationLatency: a streaming client goes away (its TCP
// connection closes) → the engine's next callback answers Cancel. The
// figure is bounded by the inter-token interval (1 ms here), since the
// engine is told at its next callback.
//
//	go test -run '^$' -bench CancellationLatency ./daemon/
func BenchmarkCancellationLatency(b *testing.B) {
	engine := &tickEngine{itl: time.Millisecond, told: make(chan time.Time, 1)}
	cfg := daemontest.Defaults(b)
	srv := daemontest.Start(b, cfg, engine)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), "tok") {
		}
		gone := time.Now()
		cancel() // closes the connection
		resp.Body.Close()
		total += (<-engine.told).Sub(gone)
	}
	b.ReportMetric(float64(total)/float64(b.N)/1e6, "ms/cancel")
}
