// Package daemontest starts a real npud server on loopback for tests.
package daemontest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	cfg, err := daemon.ParseServe([]string{"--listen", "127.0.0.1:0", "--engine", "sim", "--sim-ttft", "1ms", "--sim-itl", "1ms",
		"--sim-prompt-token-cost", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	return cfg
}

// StartSim serves the default test configuration, adjusted by mutate, with
// a simulated engine that injects faults (both may be nil).
func StartSim(t testing.TB, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *Server {
	t.Helper()
	cfg := Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	return Start(t, cfg, sim.New(sim.Config{TTFT: cfg.SimTTFT, ITL: cfg.SimITL, PromptTokenCost: cfg.SimPromptTokenCost, Faults: faults}))
}

// Health fetches and decodes GET /health from base.
func Health(t testing.TB, hc *http.Client, base string) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/health", nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var h map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return h
}

// Eventually waits up to 10 s for cond, polling every 5 ms.
func Eventually(t testing.TB, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond)
}

// Start serves cfg with engine (nil: the engine cfg.Engine names) until
// the test ends; the drain is checked then. Server.Engine is nil when the
// daemon built the engine.
//
// A test that gives the engine itself runs the same whatever
// NPUD_TEST_ENGINE says, so the suites' rerun on OpenVINO (make
// test-openvino) skips it: go test ./... ran it already.
func Start(t testing.TB, cfg daemon.Config, engine npu.Engine) *Server {
	t.Helper()
	if engine != nil && EngineUnderTest() != "sim" {
		t.Skip("runs on the engine the test gives, not the one under test: go test ./... ran it")
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var opts []daemon.Option
	if engine != nil {
		opts = append(opts, daemon.WithEngine(engine))
	}
	srv, err := daemon.New(cfg, log, opts...)
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

// StartEngine serves the engine the engine-agnostic suites run on (see
// EngineUnderTest): the simulated engine with faults, or the OpenVINO
// engine against npud's GenAI test library. A test that needs the
// simulator's fault injection is skipped on OpenVINO.
func StartEngine(t testing.TB, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *Server {
	t.Helper()
	if EngineUnderTest() == "openvino" {
		if faults != nil {
			t.Skip("needs the simulated engine's fault injection")
		}
		return StartOpenVINO(t, mutate)
	}
	return StartSim(t, mutate, faults)
}

// SimOnly skips t when the suites run on OpenVINO: for checks of the
// simulated engine's own text, timing or context limit.
func SimOnly(t testing.TB, why string) {
	t.Helper()
	if EngineUnderTest() != "sim" {
		t.Skip("simulated engine only: " + why)
	}
}

// ServeIfWorker makes a test binary serve as an engine worker when a
// daemon under test started it as one (os.Executable is the test binary):
// call it first in TestMain. It does not return in a worker.
func ServeIfWorker() {
	if daemon.IsWorker() {
		os.Exit(daemon.RunWorker(context.Background()))
	}
}
