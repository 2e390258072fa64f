package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Serve is the worker process's loop: it starts the engine, reads the
// daemon's jobs from conn and runs them until the daemon says exit or the
// connection ends. An engine that cannot start answers the first job with
// why.
func Serve(ctx context.Context, conn io.ReadWriteCloser, start StartEngine) error {
	defer func() { _ = conn.Close() }()
	out := newFrameWriter(conn, maxReportFrame)
	in := newFrameReader(conn, maxJobFrame)
	engine, startErr := start(func(model, device string) {
		_ = out.message(frameCompiling, Compiling{Model: model, Device: device})
	})
	if startErr == nil {
		defer engine.Close()
	}
	statuses := &statuses{byJob: map[int64]*atomic.Int32{}}
	// Jobs run side by side: the daemon's scheduler decides how many a
	// model may run at once (one for a real engine, --sim-slots for the
	// simulator), and the daemon's frames are read meanwhile.
	var running sync.WaitGroup
	defer running.Wait()
	for {
		kind, body, err := in.next()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // the daemon went away: nothing left to do
		}
		if err != nil {
			return fmt.Errorf("reading the daemon's frames: %w", err)
		}
		switch kind {
		case frameStatus:
			id, st, err := statusOf(body)
			if err != nil {
				return err
			}
			statuses.set(id, st)
		case frameJob:
			var job Job
			if err := in.decode(body, &job); err != nil {
				return err
			}
			if job.Kind == jobExit {
				return nil
			}
			if startErr != nil {
				_ = out.message(frameDone, Done{ID: job.ID, Err: toWire(startErr)})
				return startErr
			}
			status := statuses.add(job.ID)
			running.Add(1)
			go func() {
				defer running.Done()
				defer statuses.remove(job.ID)
				done := run(ctx, out, engine, job, status)
				_ = out.message(frameDone, done) // a daemon gone cannot be told
			}()
		default:
			return protocolError("a frame of kind %q from the daemon", kind)
		}
	}
}

// statuses holds the daemon's latest answer for each running job.
type statuses struct {
	mu    sync.Mutex
	byJob map[int64]*atomic.Int32 // an npu.Status
}

func (s *statuses) add(id int64) *atomic.Int32 {
	st := new(atomic.Int32)
	s.mu.Lock()
	s.byJob[id] = st
	s.mu.Unlock()
	return st
}

func (s *statuses) remove(id int64) {
	s.mu.Lock()
	delete(s.byJob, id)
	s.mu.Unlock()
}

// set records the sink's answer to job id; one for a job that ended is
// dropped.
func (s *statuses) set(id int64, st npu.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.byJob[id]; cur != nil && int32(st) > cur.Load() {
		cur.Store(int32(st))
	}
}

func run(ctx context.Context, out *frameWriter, engine npu.Engine, job Job, status *atomic.Int32) Done {
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
		done.Result, done.Chunks, done.StoppedAt, err = generate(ctx, out, engine, job, status)
	case jobEmbed:
		var embedded npu.Embedded
		embedded, err = engine.Embed(ctx, job.Model, job.Inputs, job.Truncate)
		if err == nil {
			done.Tokens, done.Truncated = embedded.PromptTokens, embedded.Truncated
			err = sendVectors(out, job.ID, embedded.Vectors)
		}
	case jobRerank:
		r, ok := engine.(npu.Reranker)
		if !ok || !features.Reranks {
			err = fmt.Errorf("model %q: this engine does not rerank: %w", job.Model, npu.ErrNotSupported)
			break
		}
		var out npu.Reranked
		out, err = r.Rerank(ctx, job.Model, job.Query, job.Inputs, job.Truncate)
		done.Ranked, done.Tokens, done.Truncated = out.Results, out.PromptTokens, out.Truncated
	case jobCount:
		done.Tokens, err = countPrompt(ctx, engine, job)
	case jobTranscribe:
		if job.Audio == nil {
			err = fmt.Errorf("a transcription job without audio: %w", npu.ErrInvalidRequest)
			break
		}
		done.Transcript, err = engine.Transcribe(ctx, job.Audio)
		if n := transcriptBytes(done.Transcript); err == nil && n > maxReportFrame-64<<10 {
			done.Transcript, err = npu.Transcript{}, fmt.Errorf("a transcript of %d bytes is larger than a worker may send", n)
		}
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

// generate runs a generation whose text goes to the daemon as it comes,
// and answers the engine with the daemon's latest status. It returns the
// number of callbacks, and the one it first answered STOP or CANCEL (0:
// none).
//
// The worker does not wait for each callback's answer: a round trip per
// token measured 2–3 times the cost of sending the text alone (see
// docs/PERFORMANCE.md), and a sink's STOP or CANCEL comes once per
// generation. So it takes effect at the first callback after its frame
// arrives; the daemon passes no text after it to the sink, and takes the
// tokens the engine ran past it off the count (see Done.StoppedAt).
func generate(ctx context.Context, out *frameWriter, engine npu.Engine, job Job, status *atomic.Int32) (npu.Result, int64, int64, error) {
	var req npu.Request
	if err := json.Unmarshal(job.Request, &req); err != nil {
		return npu.Result{}, 0, 0, fmt.Errorf("the daemon's request: %w", err)
	}
	var chunks, stoppedAt int64
	var sendErr error
	res, err := engine.Generate(ctx, &req, func(text string) npu.Status {
		chunks++
		st := npu.Status(status.Load())
		if st == npu.Running && sendErr == nil {
			sendErr = out.text(frameChunk, job.ID, text)
		}
		if sendErr != nil {
			st = npu.Cancel // the text cannot reach the daemon
		}
		if st != npu.Running && stoppedAt == 0 {
			stoppedAt = chunks
		}
		return st
	})
	if err == nil && sendErr != nil {
		err = fmt.Errorf("sending a generation's text to the daemon: %w", sendErr)
	}
	return res, chunks, stoppedAt, err
}

// countPrompt runs a count job: the engine renders and counts the
// request's prompt. The daemon stops waiting when its request ends; the
// count itself is bounded by the engine (the tokenizer's size limit and
// timeout).
func countPrompt(ctx context.Context, engine npu.Engine, job Job) (int, error) {
	var req npu.Request
	if err := json.Unmarshal(job.Request, &req); err != nil {
		return 0, fmt.Errorf("the daemon's request: %w", err)
	}
	return engine.CountPrompt(ctx, &req)
}

// sendVectors sends an embedding's vectors to the daemon, one frame each,
// before its Done.
func sendVectors(out *frameWriter, id int64, vectors [][]float32) error {
	total := 0
	for _, v := range vectors {
		total += 4 * len(v)
		if total > maxVectorBytes {
			return fmt.Errorf("embeddings of %d bytes and more: larger than a worker may send (%d)", total, maxVectorBytes)
		}
	}
	for _, v := range vectors {
		if err := out.vector(id, v); err != nil {
			return fmt.Errorf("sending an embedding to the daemon: %w", err)
		}
	}
	return nil
}

// transcriptBytes bounds what t takes in a Done frame (a segment's
// times and field marks take under 32 bytes): the outcome of a job is the
// one frame a worker cannot split, and half an hour of speech is some
// 50 KB of text.
func transcriptBytes(t npu.Transcript) int {
	n := len(t.Text) + len(t.Language)
	for _, s := range t.Segments {
		n += len(s.Text) + 32
	}
	return n
}
