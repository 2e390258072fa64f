// Package worker runs an engine in worker processes, so that a native
// fault (a segfault, an abort, an OOM kill, a call that never returns)
// ends that process's streams with an error instead of taking the daemon
// down.
//
// The daemon side is Engine: an npu.Engine that starts one worker process
// per loaded model (the same npud binary, `npud worker`), hands it jobs and
// watches it. The worker side is Serve: it runs the real engine and asks
// the daemon for work. They speak net/rpc (gob) over the worker's standard
// input and output; the worker is the RPC client, so the one connection
// carries the daemon's jobs (Host.Next, a long poll), the streamer
// callbacks (Host.Sink, answered with the bridge's RUNNING/STOP/CANCEL, as
// in process) and the results (Host.Done).
package worker

import (
	"errors"
	"fmt"

	"github.com/npud/npud/npu"
)

// The kinds of job a worker runs.
const (
	jobLoad     = "load"
	jobUnload   = "unload"
	jobReload   = "reload"
	jobGenerate = "generate"
	jobEmbed    = "embed"
	// jobTranscribe: speech to text (npu.Engine.Transcribe).
	jobTranscribe = "transcribe"
	jobDevices    = "devices"
	jobExit       = "exit"
)

// Job is one piece of work for a worker.
type Job struct {
	ID    int64
	Kind  string
	Model string
	Avoid []string // a load under AUTO: devices not to use
	// Request is a generation's request as JSON: gob drops a pointer to a
	// zero value (think: false would arrive as "unset").
	Request []byte
	Inputs  []string               // embed
	Audio   *npu.TranscribeRequest // transcribe
}

// Done is a job's outcome.
type Done struct {
	ID      int64
	Chunks  int64 // a generation's streamer callbacks, all sent before Done
	Result  npu.Result
	Device  string // load, reload: where the model runs
	Devices []Device
	// Features is what the worker's engine can do (the devices job): the
	// daemon's side describes itself with it.
	Features npu.Features
	Vectors  [][]float32
	Tokens   int
	// Transcript is a transcription's result.
	Transcript npu.Transcript
	Err        *WireError
}

// Device is a device the worker's engine sees.
type Device struct{ Name, FullName string }

// Chunk is one streamer callback of a generation. The worker does not
// wait for each answer (a round trip per token would cost more than the
// budget of 50 µs): it sends chunks in order, numbered, and answers GenAI
// with the latest status the daemon sent back, so a STOP or CANCEL takes
// effect at the callback after its answer arrives (the bridge passes no
// text after it decided to stop). The daemon's RPC server handles calls
// concurrently, so it puts chunks back in order by Seq.
type Chunk struct {
	ID   int64
	Seq  int64
	Text string
}

// Compiling says which device the worker is about to compile a model for.
type Compiling struct{ Model, Device string }

// WireError carries an error across the process boundary by the name of
// its sentinel (npu.ErrorCode), so the daemon rebuilds an error of the same
// class: the APIs answer it, and the metrics count it, as in process.
type WireError struct {
	Code    string // npu.ErrorCode of the error; "" for an unclassified one
	Engine  string // set when it was an *npu.EngineError: the engine's name
	Invalid bool   // it was an *npu.InvalidRequestError
	Param   string // the InvalidRequestError's
	Message string // the error's text (an EngineError's: its cause's)
}

// toWire names err for the daemon.
func toWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Code: npu.ErrorCode(err), Message: err.Error()}
	var invalid *npu.InvalidRequestError
	var engineErr *npu.EngineError
	switch {
	case errors.As(err, &invalid):
		w.Invalid, w.Param, w.Message = true, invalid.Param, invalid.Message
	case errors.As(err, &engineErr) && engineErr.Cause != nil:
		w.Engine, w.Message = engineErr.Engine, engineErr.Cause.Error()
	}
	return w
}

// remoteError is an error the worker returned: its text, and the sentinel
// that classifies it.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// errorOf rebuilds the worker's error: the same text, the same sentinel,
// an *npu.EngineError or *npu.InvalidRequestError where it was one.
func (w *WireError) errorOf() error {
	if w == nil {
		return nil
	}
	if w.Invalid {
		return &npu.InvalidRequestError{Param: w.Param, Message: w.Message}
	}
	var err error = &remoteError{w.Message, npu.Sentinel(w.Code)}
	if w.Engine != "" {
		err = &npu.EngineError{Engine: w.Engine, Cause: err}
	}
	return err
}

// FaultError ends the generations of a worker that crashed or hung; it
// wraps npu.ErrEngineCrashed or npu.ErrEngineHung.
type FaultError struct {
	Model  string
	Device string
	Cause  string // the exit status or signal, or what the watchdog saw
	Kind   error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("the worker running model %q on %s %v: %s; it is restarted", e.Model, orUnknown(e.Device), e.Kind, e.Cause)
}

func (e *FaultError) Unwrap() error { return e.Kind }

func orUnknown(device string) string {
	if device == "" {
		return "an unknown device"
	}
	return device
}
