package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"sync"
	"sync/atomic"

	"github.com/npud/npud/npu"
)

// avoidingLoader is an engine that can load a model avoiding devices
// (openvino.Engine.LoadAvoiding): a worker's own business, not part of
// the engine contract, since only the workers' device health asks it.
type avoidingLoader interface {
	LoadAvoiding(ctx context.Context, model string, avoid []string) error
}

// StartEngine builds the worker's engine; compiling is to be told each
// device a model is about to be compiled for.
type StartEngine func(compiling func(model, device string)) (npu.Engine, error)

// Serve is the worker process's loop: it starts the engine, asks the
// daemon at the other end of conn for jobs and runs them until the daemon
// says exit or the connection ends. An engine that cannot start answers
// the first job with why.
func Serve(ctx context.Context, conn io.ReadWriteCloser, start StartEngine) error {
	client := rpc.NewClient(conn)
	defer func() { _ = client.Close() }()
	engine, startErr := start(func(model, device string) {
		_ = client.Call("Host.Compiling", Compiling{Model: model, Device: device}, &struct{}{})
	})
	if startErr == nil {
		defer engine.Close()
	}
	// Jobs run side by side: the daemon's scheduler decides how many a
	// model may run at once (one for a real engine, --sim-slots for the
	// simulator), and a long poll for the next job goes on meanwhile.
	var running sync.WaitGroup
	defer running.Wait()
	for {
		var job Job
		if err := client.Call("Host.Next", struct{}{}, &job); err != nil {
			if errors.Is(err, rpc.ErrShutdown) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil // the daemon went away: nothing left to do
			}
			return fmt.Errorf("asking for work: %w", err)
		}
		if job.Kind == jobExit {
			return nil
		}
		if startErr != nil {
			_ = client.Call("Host.Done", Done{ID: job.ID, Err: toWire(startErr)}, &struct{}{})
			return startErr
		}
		running.Add(1)
		go func() {
			defer running.Done()
			done := run(ctx, client, engine, job)
			_ = client.Call("Host.Done", done, &struct{}{}) // a daemon gone cannot be told
		}()
	}
}

func run(ctx context.Context, client *rpc.Client, engine npu.Engine, job Job) Done {
	done := Done{ID: job.ID}
	var err error
	features := engine.Describe()
	switch job.Kind {
	case jobLoad:
		if l, ok := engine.(avoidingLoader); ok {
			err = l.LoadAvoiding(ctx, job.Model, job.Avoid)
		} else if features.LoadsModels {
			err = engine.Load(ctx, job.Model)
		}
		done.Device = engine.DeviceOf(job.Model)
	case jobReload:
		if features.Reloads {
			err = engine.Reload(ctx, job.Model)
		}
		done.Device = engine.DeviceOf(job.Model)
	case jobUnload:
		if features.LoadsModels {
			err = engine.Unload(job.Model)
		}
	case jobGenerate:
		done.Result, done.Chunks, err = generate(ctx, client, engine, job)
	case jobEmbed:
		done.Vectors, done.Tokens, err = engine.Embed(ctx, job.Model, job.Inputs)
	case jobTranscribe:
		if job.Audio == nil {
			err = fmt.Errorf("a transcription job without audio: %w", npu.ErrInvalidRequest)
			break
		}
		done.Transcript, err = engine.Transcribe(ctx, job.Audio)
	case jobDevices:
		for name, full := range engine.DeviceNames() {
			done.Devices = append(done.Devices, Device{Name: name, FullName: full})
		}
		done.Features = features
	default:
		err = fmt.Errorf("unknown job %q", job.Kind)
	}
	done.Err = toWire(err)
	return done
}

// generate runs a generation whose chunks go to the daemon without waiting
// for each answer (see Chunk). It returns the number of chunks sent.
func generate(ctx context.Context, client *rpc.Client, engine npu.Engine, job Job) (npu.Result, int64, error) {
	var latest atomic.Int32 // the most final status answered so far
	replies := make(chan *rpc.Call, 256)
	total := make(chan int64, 1) // how many answers to wait for, once known
	// The answers set the latest status; the goroutine ends when every
	// chunk's answer is in.
	go func() {
		received, expected := int64(0), int64(-1)
		for expected < 0 || received < expected {
			select {
			case expected = <-total:
			case call := <-replies:
				received++
				st := npu.Cancel // an answer that did not come back: nobody reads on
				if call.Error == nil {
					st = *call.Reply.(*npu.Status)
				}
				for cur := latest.Load(); int32(st) > cur && !latest.CompareAndSwap(cur, int32(st)); cur = latest.Load() {
				}
			}
		}
	}()
	var req npu.Request
	if err := json.Unmarshal(job.Request, &req); err != nil {
		return npu.Result{}, 0, fmt.Errorf("the daemon's request: %w", err)
	}
	var chunks int64
	res, err := engine.Generate(ctx, &req, func(text string) npu.Status {
		chunks++
		client.Go("Host.Sink", Chunk{ID: job.ID, Seq: chunks, Text: text}, new(npu.Status), replies)
		return npu.Status(latest.Load())
	})
	total <- chunks
	return res, chunks, err
}
