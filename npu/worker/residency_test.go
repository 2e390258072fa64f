package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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
		features: npu.Features{Reloads: true, Embeds: true, Transcribes: true, ExactCounts: true},
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
		func() error { _, err := e.Embed(ctx, "m", []string{"x"}, false); return err },
		func() error { _, err := e.Transcribe(ctx, &npu.TranscribeRequest{Model: "m"}); return err },
		func() error { return e.Reload(ctx, "m") },
		func() error { _, err := e.CountPrompt(ctx, &npu.Request{Model: "m", Prompt: "hi"}); return err },
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

// diesAtItsJob is a worker's standard input whose process dies at the
// first job the daemon writes it: die runs once that write returned, and
// the write's outcome is the pipe's.
type diesAtItsJob struct {
	w    io.Writer
	once sync.Once
	die  func()
}

func (d *diesAtItsJob) Write(b []byte) (int, error) {
	n, err := d.w.Write(b)
	d.once.Do(d.die)
	return n, err
}

// workerDyingAtItsJob is model m's worker, loaded on the NPU, that dies as
// its next job is written to it (it said it compiled the model for the
// NPU): after reading the job (reached), or
// before, its input closed already (killed while idle), so that the job's
// write fails with EPIPE. Its death is seen (exited) only after that
// write: the process watcher closes exited once it has read the worker's
// output to its end, which may come after the next job was handed over.
func workerDyingAtItsJob(t *testing.T, reached bool) *proc {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = r.Close(), w.Close() })
	p := &proc{model: "m", cmd: &exec.Cmd{}, calls: map[int64]*call{}, exited: make(chan struct{}),
		device: "NPU", compiling: "NPU", log: slog.New(slog.DiscardHandler)}
	if !reached {
		require.NoError(t, r.Close())
	}
	worker := newFrameReader(r, maxJobFrame)
	p.out = newFrameWriter(&diesAtItsJob{w: w, die: func() {
		if reached {
			kind, _, err := worker.next() // the worker reads its job, then dies
			assert.NoError(t, err)
			assert.Equal(t, frameJob, kind)
		}
		p.mu.Lock()
		p.exitErr = errors.New("signal: killed")
		p.mu.Unlock()
		close(p.exited)
	}}, maxJobFrame)
	return p
}

// A worker that died before a job reached it (its input closed: the job's
// write failed) ran nothing, even when its death is seen only after the
// job was handed over: the job ends like one that found it dead idle, with
// model_lost alone, for the pool to load the model again and run the job
// once more, and no device is charged. A worker that died after the job
// reached it is a crash during the job (engine_crashed), whose device is
// charged: it may have died of the job.
func TestAWorkerDeadBeforeItsJobReachedItLosesTheModelAlone(t *testing.T) {
	ctx := context.Background()
	jobs := map[string]func(e *Engine) error{
		"generate": func(e *Engine) error {
			_, err := e.Generate(ctx, &npu.Request{Model: "m", Prompt: "hi"}, func(string) npu.Status { return npu.Running })
			return err
		},
		"embed":      func(e *Engine) error { _, err := e.Embed(ctx, "m", []string{"x"}, false); return err },
		"transcribe": func(e *Engine) error { _, err := e.Transcribe(ctx, &npu.TranscribeRequest{Model: "m"}); return err },
		"reload":     func(e *Engine) error { return e.Reload(ctx, "m") },
		"count": func(e *Engine) error {
			_, err := e.CountPrompt(ctx, &npu.Request{Model: "m", Prompt: "hi"})
			return err
		},
	}
	for _, tc := range []struct {
		name    string
		reached bool
		code    string
		charged []string
	}{
		{name: "died before the job reached it", reached: false, code: "model_lost", charged: nil},
		{name: "died after the job reached it", reached: true, code: "engine_crashed", charged: []string{"NPU"}},
	} {
		for kind, job := range jobs {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				obs := &restartLog{}
				e := testEngine(obs)
				p := workerDyingAtItsJob(t, tc.reached)
				e.procs["m"], e.loadedIn["m"] = p, p
				err := job(e)
				require.ErrorIs(t, err, npu.ErrModelLost)
				assert.Equal(t, tc.code, npu.ErrorCode(err), "%v", err)
				assert.Contains(t, err.Error(), "signal: killed")
				assert.Empty(t, e.procs, "the worker is forgotten")
				assert.Empty(t, e.loadedIn, "with its model")
				assert.Equal(t, 1, e.restarts["m"], "the next load backs off")
				assert.Equal(t, []string{"m crashed"}, obs.restarts)
				assert.Equal(t, tc.charged, e.health.unhealthyDevices())
			})
		}
	}
}
