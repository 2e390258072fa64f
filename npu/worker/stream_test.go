package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// testWorkerEnv makes this test binary a worker process: "sim" serves the
// simulated engine with Serve, "clock-N" the clockEngine with N µs between
// tokens, "pipe-N" writes N clock readings (BenchmarkChunkCrossing),
// "compile-then-die" dies as it starts compiling a model, the modes of
// countingEngines serve the simulator with another CountPrompt, and
// "closes-output" closes its output; any other value is a worker that
// answers its first job with that kind of broken frame (brokenFrames).
const testWorkerEnv = "NPUD_TEST_WORKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(testWorkerEnv); mode != "" {
		os.Exit(runTestWorker(mode))
	}
	os.Exit(m.Run())
}

type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

func runTestWorker(mode string) int {
	conn := stdio{os.Stdin, os.Stdout}
	if mode == "sim" || mode == shortSim || strings.HasPrefix(mode, "clock-") || countingEngines[mode] != nil {
		err := Serve(context.Background(), conn, func(func(model, device string)) (npu.Engine, error) {
			if engine := countingEngines[mode]; engine != nil {
				return engine(), nil
			}
			if pace, ok := strings.CutPrefix(mode, "clock-"); ok {
				us, err := strconv.Atoi(pace)
				return clockEngine{sim.New(sim.Config{}), time.Duration(us) * time.Microsecond}, err
			}
			if mode == shortSim {
				return sim.New(sim.Config{ContextLength: shortSimContext}), nil
			}
			return sim.New(sim.Config{}), nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	if n, ok := strings.CutPrefix(mode, "pipe-"); ok {
		count, err := strconv.Atoi(n)
		if err != nil {
			return 2
		}
		return pipeClock(count)
	}
	in := newFrameReader(os.Stdin, maxJobFrame)
	kind, body, err := in.next()
	var job Job
	if err == nil && kind == frameJob {
		err = in.decode(body, &job)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test worker: reading its first job:", err)
		return 1
	}
	if mode == "compile-then-die" {
		out := newFrameWriter(os.Stdout, maxReportFrame)
		if job.Kind == jobLoad {
			_ = out.message(frameCompiling, Compiling{Model: job.Model, Device: "NPU"})
			return 3 // as a compiler that aborts
		}
		_ = out.message(frameDone, Done{ID: job.ID})
		_, _, _ = in.next() // exit
		return 0
	}
	if mode == "closes-output" {
		_ = os.Stdout.Close()
	} else if _, err := os.Stdout.Write(brokenFrames[mode](job.ID)); err != nil {
		return 1
	}
	// The pipes stay open: a daemon that waited for more of the frame
	// would wait for ever.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// frame is one frame of kind with body, as a worker would write it.
func frame(kind byte, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(1+len(body))), append([]byte{kind}, body...)...)
}

func id(n int64) []byte { return binary.AppendUvarint(nil, uint64(n)) }

// brokenFrames are what a worker whose host memory was corrupted could
// write, by the test worker's mode.
var brokenFrames = map[string]func(job int64) []byte{
	// A length of 4 GiB, and nothing after it.
	"oversized": func(int64) []byte { return []byte{0xff, 0xff, 0xff, 0xff} },
	// Just over the largest frame a worker may send.
	"too-large": func(int64) []byte { return binary.BigEndian.AppendUint32(nil, maxReportFrame+1) },
	"empty":     func(int64) []byte { return binary.BigEndian.AppendUint32(nil, 0) },
	"unknown":   func(job int64) []byte { return frame('x', id(job)) },
	// An outcome that is not gob.
	"garbage": func(job int64) []byte { return frame(frameDone, []byte("\x07not a gob message at all")) },
	// A gob message whose length says 8 GiB; the frame has 9 bytes.
	"gob-length": func(job int64) []byte {
		return frame(frameDone, []byte{0xf8, 0x02, 0, 0, 0, 0, 0, 0, 0})
	},
	"no-job-id": func(int64) []byte { return frame(frameChunk, []byte{0xff, 0xff, 0xff}) },
	// Text for a job that is no generation.
	"text": func(job int64) []byte { return frame(frameChunk, append(id(job), "hello"...)) },
	// A vector for a job that is not an embedding.
	"vector": func(job int64) []byte { return frame(frameVector, append(id(job), 0, 0, 0x80, 0x3f)) },
	"half-a-float": func(job int64) []byte {
		return frame(frameVector, append(id(job), 0, 0, 0x80))
	},
}

// engineOfTestWorkers is an Engine whose workers are this test binary in
// mode.
func engineOfTestWorkers(t testing.TB, mode string) (*Engine, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return New(ctx, Config{Name: "sim", Simulated: true, Catalog: sim.New(sim.Config{}),
		Command: func() *exec.Cmd {
			cmd := exec.CommandContext(t.Context(), exe)
			cmd.Env = append(os.Environ(), testWorkerEnv+"="+mode)
			cmd.Stderr = os.Stderr
			return cmd
		}})
}

// A frame that breaks the protocol ends its worker as a crash that says
// why, at once: nothing is allocated for a length that lies, and no reader
// waits for the rest of a frame that will not come.
func TestBrokenFrameEndsTheWorkerAsAFault(t *testing.T) {
	for mode := range brokenFrames {
		t.Run(mode, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := engineOfTestWorkers(t, mode)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, npu.ErrEngineCrashed)
			var fault *FaultError
			require.ErrorAs(t, err, &fault)
			assert.Contains(t, fault.Cause, "it broke the worker protocol")
			// gob reads a message whose length lies in 10 MiB chunks.
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), "bytes allocated")
		})
	}
}

// A worker that closes its output can say nothing more: it is ended as a
// crash, not waited for.
func TestWorkerThatClosesItsOutputIsEnded(t *testing.T) {
	_, err := engineOfTestWorkers(t, "closes-output")
	require.ErrorIs(t, err, npu.ErrEngineCrashed)
}

// What a worker wrote before it died is read before its death is seen:
// the device it was compiling for when it died is charged.
func TestTheDeviceAWorkerDiedCompilingForIsKnown(t *testing.T) {
	e, err := engineOfTestWorkers(t, "compile-then-die")
	require.NoError(t, err)
	defer e.Close()
	err = e.Load(t.Context(), sim.ModelID)
	require.ErrorIs(t, err, npu.ErrEngineCrashed)
	assert.Contains(t, err.Error(), "while compiling it on NPU (exit status 3)")
}

// inProcess runs req on the simulated engine in this process: the chunks
// its sink receives, and the result.
func inProcess(t *testing.T, req npu.Request, stopAt int) ([]string, npu.Result) {
	t.Helper()
	var chunks []string
	res, err := sim.New(sim.Config{}).Generate(t.Context(), &req, func(text string) npu.Status {
		chunks = append(chunks, text)
		if len(chunks) >= stopAt {
			return npu.Stop
		}
		return npu.Running
	})
	require.NoError(t, err)
	return chunks, res
}

// A worker's generations run side by side and their chunks reach each sink
// in the order the engine produced them, with nothing putting them back in
// order: one reader passes the worker's frames on as they come.
func TestChunksArriveInOrderUnderConcurrency(t *testing.T) {
	e, err := engineOfTestWorkers(t, "sim")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Load(t.Context(), sim.ModelID))
	const generations = 24
	var wg sync.WaitGroup
	for i := range generations {
		wg.Go(func() {
			req := npu.Request{Model: sim.ModelID, Prompt: fmt.Sprintf("generation %d", i), MaxTokens: 200,
				Sampling: npu.Sampling{Seed: new(int64(i))}}
			want, wantRes := inProcess(t, req, 1<<30)
			var got []string
			res, err := e.Generate(t.Context(), &req, func(text string) npu.Status {
				got = append(got, text)
				return npu.Running
			})
			if assert.NoError(t, err) {
				assert.Equal(t, want, got, "generation %d", i)
				assert.Equal(t, wantRes.CompletionTokens, res.CompletionTokens)
				assert.Equal(t, wantRes.FinishReason, res.FinishReason)
			}
		})
	}
	wg.Wait()
}

// The sink's STOP ends the text where it said it: the sink is not called
// again (the worker's engine heard of it a few tokens later), and the
// tokens the engine ran past it are not counted.
func TestSinkStopEndsTheTextWhereItSaid(t *testing.T) {
	e, err := engineOfTestWorkers(t, "sim")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Load(t.Context(), sim.ModelID))
	const stopAt = 3
	for i := range 20 {
		req := npu.Request{Model: sim.ModelID, Prompt: fmt.Sprintf("stop %d", i), MaxTokens: 200, Sampling: npu.Sampling{Seed: new(int64(i))}}
		want, wantRes := inProcess(t, req, stopAt)
		var got []string
		res, err := e.Generate(t.Context(), &req, func(text string) npu.Status {
			got = append(got, text)
			if len(got) >= stopAt {
				return npu.Stop
			}
			return npu.Running
		})
		require.NoError(t, err)
		assert.Equal(t, want[:stopAt], got, "no text after the STOP")
		// In process the simulator counts the token it held back when it
		// stopped (stopAt+1); a worker that finished before it heard of the
		// STOP has no such token to count.
		assert.Contains(t, []int{stopAt, wantRes.CompletionTokens}, res.CompletionTokens)
	}
}

// An embedding's vectors cross in frames of their own, whole and in order.
func TestEmbeddingsCrossInFrames(t *testing.T) {
	e, err := engineOfTestWorkers(t, "sim")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.Load(t.Context(), sim.ModelID))
	inputs := []string{"one", "two", "three"}
	want, err := sim.New(sim.Config{}).Embed(t.Context(), sim.ModelID, inputs, false)
	require.NoError(t, err)
	got, err := e.Embed(t.Context(), sim.ModelID, inputs, false)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// shortSim is the test workers' mode that serves the simulator with a
// context of shortSimContext tokens, which rerank pairs pass easily.
const (
	shortSim        = "sim-short"
	shortSimContext = 8
)

// Issue 40: a rerank crosses the worker as a rerank job: the worker's
// engine's results, best first, its token count, and the client's truncate
// with the count of pairs truncated.
func TestRerankCrossesTheWorker(t *testing.T) {
	e, err := engineOfTestWorkers(t, shortSim)
	require.NoError(t, err)
	defer e.Close()
	require.True(t, e.Describe().Reranks, "the worker's engine reranks")
	require.NoError(t, e.Load(t.Context(), sim.ModelID))
	docs := []string{"one", "two", "three", "four"}
	local := sim.New(sim.Config{ContextLength: shortSimContext})
	want, err := local.Rerank(t.Context(), sim.ModelID, "query", docs, false)
	require.NoError(t, err)
	got, err := e.Rerank(t.Context(), sim.ModelID, "query", docs, false)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	long := append(slices.Clone(docs), strings.Repeat("many words here ", 8))
	_, err = e.Rerank(t.Context(), sim.ModelID, "query", long, false)
	require.ErrorIs(t, err, npu.ErrInvalidRequest, "a pair over the context without truncate")
	require.ErrorContains(t, err, "truncate")
	want, err = local.Rerank(t.Context(), sim.ModelID, "query", long, true)
	require.NoError(t, err)
	require.Equal(t, 1, want.Truncated)
	got, err = e.Rerank(t.Context(), sim.ModelID, "query", long, true)
	require.NoError(t, err)
	assert.Equal(t, want, got, "truncate crosses to the worker, and its count back")

	_, err = e.Rerank(t.Context(), sim.ModelID, "query", make([]string, npu.MaxRerankDocuments+1), false)
	require.ErrorIs(t, err, npu.ErrInvalidRequest)
}

// The daemon takes off the count the tokens a worker's engine generated
// between the sink's STOP (at chunk 3) and the callback at which the
// worker heard of it; a second outcome, or text after the first, breaks
// the protocol.
func TestFinishCountsTheTokensTheSinkTook(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		sinkStoppedAt            int64
		chunks, workerStoppedAt  int64
		engineCounted, wantCount int
	}{
		{"the sink never stopped", 0, 40, 0, 40, 40},
		{"heard at the next callback", 3, 5, 4, 5, 4},
		{"heard two callbacks later", 3, 7, 6, 7, 4},
		{"finished before it heard", 3, 30, 0, 30, 3},
		{"a count that would go below 0", 3, 1 << 40, 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := func(string) npu.Status { t.Error("text reached the sink after the outcome"); return npu.Running }
			c := &call{job: Job{Kind: jobGenerate}, done: make(chan Done, 1), sink: sink, stoppedAt: tc.sinkStoppedAt}
			require.NoError(t, c.finish(Done{Chunks: tc.chunks, StoppedAt: tc.workerStoppedAt,
				Result: npu.Result{CompletionTokens: tc.engineCounted}}))
			assert.Equal(t, tc.wantCount, (<-c.done).Result.CompletionTokens)
			require.ErrorIs(t, c.finish(Done{}), errProtocol, "a second outcome")
			require.ErrorIs(t, c.chunk(nil, "late"), errProtocol, "text after the outcome")
		})
	}
}
