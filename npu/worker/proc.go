package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu"
)

// The daemon's side of one worker process: starting it, the jobs in it
// (calls), the frames read from it and what it means when it ends.

// spawn starts a worker process and reads its frames.
func (e *Engine) spawn(model string) (*proc, error) {
	cmd := e.cfg.Command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of its own, not StdoutPipe: Wait would close that when the
	// process exits, and what the worker wrote last (the device it was
	// compiling for when it died, a job's outcome) could be lost.
	stdout, output, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = output
	keepWithParent(cmd)
	err = cmd.Start()
	_ = output.Close() // the worker has its copy
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("starting an engine worker: %w", err)
	}
	adopt(cmd)
	p := &proc{model: model, cmd: cmd, out: newFrameWriter(stdin, maxJobFrame), calls: map[int64]*call{},
		exited: make(chan struct{}), log: e.cfg.Log}
	read := make(chan struct{})
	go func() {
		defer close(read)
		p.read(newFrameReader(stdout, maxReportFrame))
	}()
	go func() {
		err := cmd.Wait()
		// Its frames are passed on before its exit is seen, unless a
		// process it started holds the pipe open.
		select {
		case <-read:
		case <-time.After(time.Second):
		}
		_ = stdout.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

func watchInterval(prefill, token time.Duration) time.Duration {
	d := 100 * time.Millisecond
	for _, t := range []time.Duration{prefill, token} {
		if t > 0 && t/10 < d {
			d = max(t/10, time.Millisecond)
		}
	}
	return d
}

// proc is one worker process.
type proc struct {
	model  string
	cmd    *exec.Cmd
	out    *frameWriter // to the worker's standard input
	exited chan struct{}
	once   sync.Once
	log    *slog.Logger

	mu        sync.Mutex
	calls     map[int64]*call
	exitErr   error
	broke     error  // the frame that broke the protocol, when one did
	device    string // where the model runs (under the engine's lock)
	compiling string // the device the worker last said it compiles for
}

// call is one job in a worker.
type call struct {
	job     Job
	done    chan Done
	sent    chan struct{} // closed when the job's write has ended
	sendErr error         // the write's error, set before sent is closed
	sink    npu.Sink
	started time.Time
	first   atomic.Int64 // unix nanoseconds of the first callback, 0 before
	last    atomic.Int64 // of the latest callback

	// The worker's reader alone uses these.
	chunks      int64       // callbacks received
	stoppedAt   int64       // the callback the sink answered STOP or CANCEL, 0 before
	vectors     [][]float32 // an embedding's, as they come
	vectorBytes int
	finished    bool // its outcome came
}

func (p *proc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *proc) compilingOn() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.compiling
}

// exitCause says how the process ended: its exit status or signal, or
// the frame that broke the protocol (it was killed for it).
func (p *proc) exitCause() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broke != nil {
		return p.broke.Error()
	}
	if p.exitErr == nil {
		return "it exited"
	}
	return p.exitErr.Error() // "signal: segmentation fault", "exit status 134"
}

// begin hands the worker a job whose callbacks go to sink.
func (p *proc) begin(job Job, sink npu.Sink) *call {
	c := &call{job: job, done: make(chan Done, 1), sent: make(chan struct{}), sink: sink, started: time.Now()}
	p.mu.Lock()
	p.calls[job.ID] = c
	p.mu.Unlock()
	// Not on the caller's goroutine: a worker that stopped reading would
	// hold it before its watchdog starts.
	go func() {
		c.sendErr = p.send(job)
		close(c.sent)
	}()
	return c
}

// unsent reports whether c's job never reached the worker: its write
// failed, the worker's input being closed (it had died: killed while
// idle), so the worker never read the whole job and ran none of it. A job
// that could not be put in a frame (errUnsendable) is no such case: it
// would fail the same way again. Only for a worker that has exited: the
// process watcher closes exited after cmd.Wait closed the worker's input,
// so by then the write has ended or fails at once.
func (c *call) unsent() bool {
	<-c.sent
	return c.sendErr != nil && !errors.Is(c.sendErr, errUnsendable)
}

func (p *proc) end(c *call) {
	p.mu.Lock()
	delete(p.calls, c.job.ID)
	p.mu.Unlock()
}

// send writes a job to the worker. A job that cannot be sent ends the
// worker (its stream's gob state is unknown), and its calls with it; a
// write that fails is a worker that is gone.
func (p *proc) send(job Job) error {
	err := p.out.message(frameJob, job)
	switch {
	case errors.Is(err, errUnsendable):
		p.abandon(fmt.Errorf("a %s job for it %w", job.Kind, err))
	case err != nil:
		p.kill()
	}
	return err
}

// do runs a job without callbacks and waits for it.
func (p *proc) do(ctx context.Context, job Job) (Done, error) {
	c := p.begin(job, nil)
	defer p.end(c)
	select {
	case d := <-c.done:
		return d, d.Err.errorOf()
	case <-p.exited:
		return Done{}, &FaultError{Model: job.Model, Device: p.compilingOn(), Cause: p.exitCause(), Kind: npu.ErrEngineCrashed,
			unsent: c.unsent()}
	case <-ctx.Done():
		return Done{}, context.Cause(ctx)
	}
}

// hung says why the generation counts as hung at now, or "".
func (c *call) hung(now time.Time, prefill, token time.Duration) string {
	first := c.first.Load()
	switch {
	case first == 0 && prefill > 0 && now.Sub(c.started) > prefill:
		return fmt.Sprintf("no first token within the prefill timeout (%s)", prefill)
	case first != 0 && token > 0 && now.Sub(time.Unix(0, c.last.Load())) > token:
		return fmt.Sprintf("no token for the token timeout (%s)", token)
	}
	return ""
}

// stop asks the worker to exit, and kills it if it does not.
func (p *proc) stop() {
	p.once.Do(func() { go func() { _ = p.send(Job{Kind: jobExit}) }() })
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
		<-p.exited
	}
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// abandon kills a worker that broke the protocol, or whose stream could
// not be written; its calls end with a fault that says why.
func (p *proc) abandon(why error) {
	p.mu.Lock()
	if p.broke == nil {
		p.broke = why
	}
	p.mu.Unlock()
	p.log.Warn("ending an engine worker", "model", p.model, "cause", why)
	p.kill()
}

// read passes the worker's frames on in the order it sent them: each
// chunk to its generation's sink (on this goroutine: a sink is cheap, as
// npu.Sink's callers expect), each outcome to the job's caller after the
// job's chunks. The stream's end is the worker's end: one that closed its
// output and lives on could answer nothing more, so it is killed, and the
// process watcher reports its exit. A frame that breaks the protocol ends
// the worker too.
func (p *proc) read(in *frameReader) {
	for {
		kind, body, err := in.next()
		if err == nil {
			err = p.dispatch(in, kind, body)
		}
		if errors.Is(err, errProtocol) {
			p.abandon(err)
			return
		}
		if err != nil {
			p.kill() // it exited (then this does nothing), or closed its output
			return
		}
	}
}

// dispatch handles one frame from the worker.
func (p *proc) dispatch(in *frameReader, kind byte, body []byte) error {
	switch kind {
	case frameChunk:
		id, text, err := idOf(body)
		if err != nil {
			return err
		}
		if c := p.callOf(id); c != nil {
			return c.chunk(p, string(text))
		}
	case frameVector:
		id, v, err := vectorOf(body)
		if err != nil {
			return err
		}
		if c := p.callOf(id); c != nil {
			return c.vector(v)
		}
	case frameCompiling:
		var c Compiling
		if err := in.decode(body, &c); err != nil {
			return err
		}
		p.mu.Lock()
		p.compiling = c.Device
		p.mu.Unlock()
	case frameDone:
		var d Done
		if err := in.decode(body, &d); err != nil {
			return err
		}
		if c := p.callOf(d.ID); c != nil {
			return c.finish(d)
		}
	default:
		return protocolError("a frame of kind %q", kind)
	}
	return nil
}

func (p *proc) callOf(id int64) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

// chunk passes one streamer callback to the sink; after the sink answered
// STOP or CANCEL the text is dropped (an engine in process would not have
// produced it), and the worker is told the answer. Text for a job that
// takes none, or after its outcome, breaks the protocol: the sink is not
// called after the generation returned.
func (c *call) chunk(p *proc, text string) error {
	if c.sink == nil || c.finished {
		return protocolError("text for job %d (%s) that takes none now", c.job.ID, c.job.Kind)
	}
	now := time.Now().UnixNano()
	c.first.CompareAndSwap(0, now)
	c.last.Store(now)
	c.chunks++
	if c.stoppedAt != 0 {
		return nil
	}
	if st := c.sink(text); st != npu.Running {
		c.stoppedAt = c.chunks
		go func() { _ = p.out.status(c.job.ID, st) }() // a worker gone cannot be told
	}
	return nil
}

// vector adds one of an embedding's vectors: no more than the job's
// inputs, nor bytes than maxVectorBytes.
func (c *call) vector(v []float32) error {
	c.vectorBytes += 4 * len(v)
	if c.job.Kind != jobEmbed || c.finished || len(c.vectors) >= len(c.job.Inputs) || c.vectorBytes > maxVectorBytes {
		return protocolError("a vector job %d (%s of %d inputs) has no room for", c.job.ID, c.job.Kind, len(c.job.Inputs))
	}
	c.vectors = append(c.vectors, v)
	return nil
}

// finish hands the job's outcome to its caller, with the vectors that came
// before it and the completion tokens the sink received: the engine also
// counted those it generated between the sink's STOP or CANCEL and the
// callback at which the worker heard of it.
func (c *call) finish(d Done) error {
	if c.finished {
		return protocolError("a second outcome of job %d", d.ID)
	}
	c.finished = true
	d.Vectors = c.vectors
	if c.stoppedAt > 0 {
		ranTo := d.StoppedAt
		if ranTo == 0 {
			ranTo = d.Chunks // the generation ended before it heard
		}
		if extra := ranTo - c.stoppedAt; extra > 0 {
			d.Result.CompletionTokens -= int(min(extra, int64(d.Result.CompletionTokens)))
		}
	}
	c.done <- d // buffered for the one outcome
	return nil
}
