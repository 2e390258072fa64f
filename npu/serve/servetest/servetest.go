// Package servetest holds what tests outside npu/serve need of the
// serving runtime: the APIs' framing tests ask a real router how long a
// client should wait before it retries. Test code only: nothing the
// binary links imports it.
package servetest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/npu/sim"
)

// IdleRouter is an idle router over the simulated engine, for the framings
// that ask theirs how long a client should wait before it retries; it is
// closed when the test ends.
func IdleRouter(t *testing.T) *serve.Router {
	r := serve.NewEngineRouter(sim.New(sim.Config{}), serve.PoolConfig{MaxQueue: 1, Stream: serve.StreamLimits{MaxPendingBytes: 1 << 20}},
		slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		r.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Wait(ctx)
	})
	return r
}
