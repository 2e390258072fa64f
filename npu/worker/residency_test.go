package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// restartLog records what the engine tells its observer.
type restartLog struct {
	mu       sync.Mutex
	restarts []string
}

func (o *restartLog) WorkerRestarted(model, reason string) {
	o.mu.Lock()
	o.restarts = append(o.restarts, model+" "+reason)
	o.mu.Unlock()
}
func (o *restartLog) DeviceHealth(string, bool) {}

func testEngine(obs Observer) *Engine {
	log := slog.New(slog.DiscardHandler)
	return &Engine{cfg: Config{Log: log, Observer: obs, RestartBackoff: time.Second, MaxBackoff: 3 * time.Second},
		health: newHealth(HealthConfig{Failures: 1}, nil, log), crashes: newCrashMemory(CrashConfig{}, time.Now),
		features: npu.Features{Reloads: true, Embeds: true, Transcribes: true},
		procs:    map[string]*proc{}, loadedIn: map[string]*proc{}, restarts: map[string]int{}, byModel: map[string]int{}}
}

func deadProc() *proc {
	p := &proc{model: "m", cmd: &exec.Cmd{}, exited: make(chan struct{})}
	p.exitErr = errors.New("signal: killed")
	close(p.exited)
	return p
}

// Issue 28: the worker engine loads nothing on its own. A model no worker
// holds, and a worker found dead before a job, are reported as a lost
// model (ErrModelLost and no other class: nothing ran), for the router's
// lifecycle to load it again; the idle death is counted as a crash without
// charging the device.
func TestJobsReportALostModelInsteadOfLoadingIt(t *testing.T) {
	obs := &restartLog{}
	e := testEngine(obs)
	ctx := context.Background()
	for _, job := range []func() error{
		func() error { _, err := e.Generate(ctx, &npu.Request{Model: "m", Prompt: "hi"}, nil); return err },
		func() error { _, _, err := e.Embed(ctx, "m", []string{"x"}); return err },
		func() error { _, err := e.Transcribe(ctx, &npu.TranscribeRequest{Model: "m"}); return err },
		func() error { return e.Reload(ctx, "m") },
	} {
		err := job()
		require.ErrorIs(t, err, npu.ErrModelLost, "no worker holds it")
		assert.Equal(t, "model_lost", npu.ErrorCode(err))
	}
	assert.Empty(t, e.procs, "no worker was started")

	p := deadProc()
	e.procs["m"], e.loadedIn["m"] = p, p
	_, err := e.Generate(ctx, &npu.Request{Model: "m", Prompt: "hi"}, nil)
	require.ErrorIs(t, err, npu.ErrModelLost)
	assert.Equal(t, "model_lost", npu.ErrorCode(err), "it died idle: nothing ran")
	assert.Contains(t, err.Error(), "signal: killed")
	assert.Empty(t, e.procs, "forgotten")
	assert.Empty(t, e.loadedIn, "with its model")
	assert.Equal(t, 1, e.restarts["m"], "the next load backs off")
	assert.EqualValues(t, 1, e.Restarts())
	assert.Equal(t, 1, e.ModelRestarts("m"))
	assert.Equal(t, []string{"m crashed"}, obs.restarts)
	assert.Empty(t, e.health.unhealthyDevices(), "no device charged for an idle death")
}

// Issue 28: a crash during a job loses the model too, and keeps its class.
func TestAFaultLosesTheModelAndKeepsItsClass(t *testing.T) {
	e := testEngine(nil)
	var req *npu.Request
	var fp string
	for i, fault := range []*FaultError{
		{Model: "m", Device: "NPU", Cause: "signal: segmentation fault", Kind: npu.ErrEngineCrashed},
		{Model: "m", Device: "NPU", Cause: "no token", Kind: npu.ErrEngineHung},
	} {
		req = &npu.Request{Model: "m", Prompt: fmt.Sprint("crash me ", i)}
		fp = fingerprint(req)
		err := modelLost(e.requestFault(req, fp, deadProc(), fault))
		require.ErrorIs(t, err, npu.ErrModelLost)
		assert.Equal(t, npu.ErrorCode(fault), npu.ErrorCode(err))
		assert.Equal(t, fault.Error(), err.Error())
		var asFault *FaultError
		assert.ErrorAs(t, err, &asFault)
	}
	repeat := modelLost(e.requestFault(req, fp, deadProc(), &FaultError{Model: "m", Kind: npu.ErrEngineCrashed}))
	assert.Equal(t, "engine_crashed_on_request", npu.ErrorCode(repeat))
	assert.ErrorIs(t, repeat, npu.ErrModelLost)
}

// Issue 28: a load after faults waits the restart backoff (doubled per
// fault, capped), bounded by its context; a model without faults does not
// wait.
func TestLoadBacksOffAfterFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(nil)
		ctx := context.Background()
		for faults, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 2 * time.Second, 5: 3 * time.Second} {
			e.restarts["m"] = faults
			start := time.Now()
			require.NoError(t, e.backoff(ctx, "m"))
			assert.Equal(t, want, time.Since(start), "%d faults", faults)
		}
		e.restarts["m"] = 3
		ctx, cancel := context.WithTimeoutCause(ctx, 100*time.Millisecond, errors.New("gave up"))
		defer cancel()
		start := time.Now()
		require.EqualError(t, e.backoff(ctx, "m"), "gave up")
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
	})
}
