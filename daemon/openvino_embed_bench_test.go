//go:build cgo

package daemon_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npud/npud/cli/bench"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/openvino"
)

// envEmbedBenchModel names the embedding model folder that
// BenchmarkOfficialEmbeddings serves: alone in its parent folder, which is
// the models folder (make_tinyembed.py makes one of BERT-base's size).
const envEmbedBenchModel = "NPUD_EMBED_BENCH_MODEL"

// BenchmarkOfficialEmbeddings measures npud's /v1/embeddings on the real
// OpenVINO core from the pinned wheels, CPU: the daemon over loopback HTTP
// with the OpenVINO engine in its process (the wheels hold no GenAI C
// library, so npud serve cannot start on them; the engine is made on the
// core as the official tests make it), driven by npud bench's embeddings
// load. Each iteration is one pass over the inputs of
// genai_embed_bench.py's defaults (256 texts of 64 words, seed 1, 32 a
// request; NPUD_EMBED_BENCH_INPUTS, _WORDS, _BATCH change them), after a
// request of the first batch that loads the model and is not timed; it reports inputs/s and
// input tokens/s (docs/PERFORMANCE.md).
//
//	NPUD_OPENVINO_VENV=... NPUD_EMBED_BENCH_MODEL=/tmp/embmodels/bertbase \
//	  go test -run '^$' -bench OfficialEmbeddings -benchtime 1x ./daemon/
func BenchmarkOfficialEmbeddings(b *testing.B) {
	dir := os.Getenv(envEmbedBenchModel)
	if dir == "" {
		b.Skipf("%s is not set: it names the embedding model to measure", envEmbedBenchModel)
	}
	_, lib := officialCore(b)
	engine, err := openvino.New(openvino.Config{Library: lib, ModelsDir: filepath.Dir(dir), Device: "CPU"}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	cfg := daemontest.Defaults(b)
	cfg.MaxEmbedInputs = 4096
	srv := daemontest.Start(b, cfg, engine)
	run := bench.Config{URL: srv.URL, API: "openai", Model: filepath.Base(dir), Endpoint: bench.EndpointEmbeddings,
		Concurrency: 1, Inputs: envInt(b, "NPUD_EMBED_BENCH_INPUTS", 256), PromptTokens: envInt(b, "NPUD_EMBED_BENCH_WORDS", 64),
		Batch: envInt(b, "NPUD_EMBED_BENCH_BATCH", 32), Seed: 1}
	run.Requests = 1 // the first batch, to load the model, as genai_embed_bench.py warms up
	if samples, _, err := bench.Run(b.Context(), run, nil); err != nil || samples[0].Err != "" {
		b.Fatalf("warm-up: %v %v", err, samples)
	}
	run.Requests = b.N * ((run.Inputs + run.Batch - 1) / run.Batch)
	cpu := processCPU(b)
	b.ResetTimer()
	samples, elapsed, err := bench.Run(b.Context(), run, nil)
	b.StopTimer()
	cpu = processCPU(b) - cpu
	if err != nil {
		b.Fatal(err)
	}
	r := bench.Summarise(run, samples, elapsed)
	if r.Succeeded != r.Requests {
		b.Fatalf("%d of %d requests failed: %v", r.Requests-r.Succeeded, r.Requests, r.Errors)
	}
	var table strings.Builder
	r.WriteTable(&table)
	b.Log("\n" + table.String())
	b.ReportMetric(r.InputsPerS, "inputs/s")
	b.ReportMetric(r.InputTokensPerS, "tokens/s")
	// The CPU time of the whole process (client, daemon, OpenVINO's
	// threads) per input: what the work costs, less swayed than inputs/s
	// by other programs on the machine.
	b.ReportMetric(cpu.Seconds()*1000/float64(r.InputsEmbedded), "cpu-ms/input")
}

// processCPU is the user and system time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}
