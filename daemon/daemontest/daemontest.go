// Package daemontest starts a real npud server on loopback for tests.
package daemontest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// Server is a running test server.
type Server struct {
	URL    string // http://127.0.0.1:PORT
	Config daemon.Config
	Engine npu.Engine
	stop   context.CancelFunc
	done   chan error
}

// Defaults is the test configuration: the production defaults from the
// flag table, a free loopback port, and a fast simulated engine.
func Defaults(t testing.TB) daemon.Config {
	t.Helper()
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0", "--sim-ttft", "1ms", "--sim-itl", "1ms",
		"--sim-prompt-token-cost", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	return cfg
}

// Start serves cfg with engine (nil: the simulated engine cfg describes,
// with faults when given) until the test ends; the drain is checked then.
func Start(t testing.TB, cfg daemon.Config, engine npu.Engine) *Server {
	t.Helper()
	if engine == nil {
		engine = sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, PromptTokenCost: cfg.SimPromptTokenCost})
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := daemon.New(cfg, log, daemon.WithEngine(engine))
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + srv.Addr().String(), Config: cfg, Engine: engine, stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("server stopped with: %v", err)
		}
	})
	return s
}

// Stop drains the server and returns what Serve returned. It is safe to
// call more than once.
func (s *Server) Stop() error {
	s.stop()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
		}
		return err
	case <-time.After(time.Minute):
		return context.DeadlineExceeded
	}
}

// testWriter sends server logs to the test log (shown on failure or -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
