package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"

	"github.com/npud/npud/npu"
)

// avoidingLoader is an engine that can load a model avoiding devices
// (openvino.Engine.LoadAvoiding).
type avoidingLoader interface {
	LoadAvoiding(ctx context.Context, model string, avoid []string) error
}

// DeviceLister lists the devices the worker's engine sees.
type DeviceLister interface {
	DeviceNames() map[string]string
}

// StartEngine builds the worker's engine; compiling is to be told each
// device a model is about to be compiled for.
type StartEngine func(compiling func(model, device string)) (npu.Engine, error)

// Serve is the worker process's loop: it starts the engine, asks the
// daemon at the other end of conn for jobs and runs them until the daemon
// says exit or the connection ends. Only one job runs at a time: the
// daemon's scheduler gives a worker (a model) one generation at a time.
// An engine that cannot start answers the first job with why.
func Serve(ctx context.Context, conn io.ReadWriteCloser, start StartEngine) error {
	client := rpc.NewClient(conn)
	defer func() { _ = client.Close() }()
	engine, startErr := start(func(model, device string) {
		_ = client.Call("Host.Compiling", Compiling{Model: model, Device: device}, &struct{}{})
	})
	if c, ok := engine.(npu.Closer); ok && startErr == nil {
		defer c.Close()
	}
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
		done := run(ctx, client, engine, job)
		if err := client.Call("Host.Done", done, &struct{}{}); err != nil {
			return fmt.Errorf("reporting job %d: %w", job.ID, err)
		}
	}
}

func run(ctx context.Context, client *rpc.Client, engine npu.Engine, job Job) Done {
	done := Done{ID: job.ID}
	var err error
	switch job.Kind {
	case jobLoad:
		if l, ok := engine.(avoidingLoader); ok {
			err = l.LoadAvoiding(ctx, job.Model, job.Avoid)
		} else if l, ok := engine.(npu.ModelLoader); ok {
			err = l.Load(ctx, job.Model)
		}
		done.Device = deviceOf(engine, job.Model)
	case jobReload:
		if r, ok := engine.(npu.Reloader); ok {
			err = r.Reload(ctx, job.Model)
		}
		done.Device = deviceOf(engine, job.Model)
	case jobUnload:
		if l, ok := engine.(npu.ModelLoader); ok {
			err = l.Unload(job.Model)
		}
	case jobGenerate:
		done.Result, err = engine.Generate(ctx, job.Request, func(text string) npu.Status {
			status := npu.Cancel // a daemon that cannot be told has no reader left
			if callErr := client.Call("Host.Sink", Chunk{ID: job.ID, Text: text}, &status); callErr != nil {
				return npu.Cancel
			}
			return status
		})
	case jobEmbed:
		e, ok := engine.(npu.Embedder)
		if !ok {
			err = fmt.Errorf("embeddings: %w", npu.ErrNotSupported)
			break
		}
		done.Vectors, done.Tokens, err = e.Embed(ctx, job.Model, job.Inputs)
	case jobDevices:
		if d, ok := engine.(DeviceLister); ok {
			for name, full := range d.DeviceNames() {
				done.Devices = append(done.Devices, Device{Name: name, FullName: full})
			}
		}
	default:
		err = fmt.Errorf("unknown job %q", job.Kind)
	}
	done.Err = toWire(err)
	return done
}

func deviceOf(engine npu.Engine, model string) string {
	if d, ok := engine.(npu.DeviceReporter); ok {
		return d.DeviceOf(model)
	}
	return ""
}
