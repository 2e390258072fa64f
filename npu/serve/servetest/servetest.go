// Package servetest holds what tests outside npu/serve need of the
// serving runtime: the APIs' framing tests ask a real router how long a
// client should wait before it retries, and their fuzzers serve requests
// through one. Test code only: nothing the
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
func IdleRouter(t *testing.T) *serve.Router { return SimRouter(t, 1) }

// SimRouter is a router over a fast simulated engine with a queue of
// maxQueue requests, for tests that serve an API in-process (the APIs'
// fuzzers); it is aborted and waited for when the test or fuzz target ends.
func SimRouter(tb testing.TB, maxQueue int) *serve.Router {
	r := serve.NewEngineRouter(sim.New(sim.Config{}), serve.PoolConfig{MaxQueue: maxQueue, Stream: serve.StreamLimits{MaxPendingBytes: 1 << 20}},
		slog.New(slog.DiscardHandler))
	tb.Cleanup(func() {
		r.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Wait(ctx)
	})
	return r
}
