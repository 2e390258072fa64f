package worker

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// clockEngine is the simulated engine whose every token is the wall clock
// at the moment its sink is called, pace apart: the daemon's sink reads
// how long the token took to cross the process boundary.
type clockEngine struct {
	*sim.Engine
	pace time.Duration
}

func (c clockEngine) Generate(_ context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	res := npu.Result{FinishReason: npu.FinishLength}
	for i := range req.MaxTokens {
		if i > 0 && c.pace > 0 {
			time.Sleep(c.pace) // the engine's pacing: a device's time per token
		}
		res.CompletionTokens++
		if sink(strconv.FormatInt(time.Now().UnixNano(), 10)) != npu.Running {
			res.FinishReason = npu.FinishStop
			break
		}
	}
	return res, nil
}

// BenchmarkChunkCrossing measures what one streamer callback pays to
// cross from a worker's engine to the daemon's sink, alone: the time from
// the worker's callback to the sink's call (both read the same wall
// clock), at the median and p99, with tokens back to back (a burst) and
// 1 ms apart (device pacing; an NPU takes 20 ms or more). The engine is
// the simulated one in the test binary as the worker: a model of npud's
// own overhead, not of a device. "pipe" is the floor: the same clock
// readings written bare to a pipe by a child process, 1 ms apart, so
// that what the protocol adds shows beside what waking another process
// costs on the machine.
//
//	go test -run '^$' -bench ChunkCrossing -benchtime 200x -count 3 ./npu/worker/
func BenchmarkChunkCrossing(b *testing.B) {
	for _, pace := range []string{"0", "1000"} {
		b.Run("pace="+pace+"us", func(b *testing.B) {
			e, err := engineOfTestWorkers(b, "clock-"+pace)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if err := e.Load(b.Context(), sim.ModelID); err != nil {
				b.Fatal(err)
			}
			var crossings []time.Duration
			b.ResetTimer()
			for range b.N {
				req := npu.Request{Model: sim.ModelID, Prompt: "cross", MaxTokens: 32}
				_, err := e.Generate(b.Context(), &req, func(text string) npu.Status {
					now := time.Now().UnixNano()
					if stamp, err := strconv.ParseInt(text, 10, 64); err == nil {
						crossings = append(crossings, time.Duration(now-stamp))
					}
					return npu.Running
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCrossings(b, crossings)
		})
	}
	b.Run("pace=1000us/pipe", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.CommandContext(b.Context(), exe)
		cmd.Env = append(os.Environ(), testWorkerEnv+"=pipe-"+strconv.Itoa(32*b.N))
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		in := bufio.NewReader(out)
		var crossings []time.Duration
		var stamp [8]byte
		for range 32 * b.N {
			if _, err := io.ReadFull(in, stamp[:]); err != nil {
				b.Fatal(err)
			}
			crossings = append(crossings, time.Duration(time.Now().UnixNano()-int64(binary.LittleEndian.Uint64(stamp[:]))))
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		reportCrossings(b, crossings)
	})
}

// pipeClock is the test worker that writes n clock readings, 1 ms apart,
// to its standard output.
func pipeClock(n int) int {
	var stamp [8]byte
	for i := range n {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		binary.LittleEndian.PutUint64(stamp[:], uint64(time.Now().UnixNano()))
		if _, err := os.Stdout.Write(stamp[:]); err != nil {
			return 1
		}
	}
	return 0
}

func reportCrossings(b *testing.B, crossings []time.Duration) {
	slices.Sort(crossings)
	at := func(p int) float64 {
		return float64(crossings[min(len(crossings)-1, len(crossings)*p/100)].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(50), "crossing-p50-µs")
	b.ReportMetric(at(99), "crossing-p99-µs")
}
