package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/npud/npud/cli/bench"
)

const benchUsage = `usage: npud bench [--preset quick|standard|soak] [flags]

Drives an OpenAI-compatible (SSE) or Ollama-compatible (NDJSON) streaming
endpoint and reports TTFT, inter-token latency, TPOT and end-to-end time
(p50/p90/p99/max), throughput and errors by kind. With --endpoint
embeddings it drives OpenAI's /v1/embeddings with a fixed set of inputs
(--inputs, --batch, --prompt-tokens words each, --seed) and reports
inputs/s, input tokens/s and end-to-end time. Definitions:
docs/PERFORMANCE.md.
`

// benchCommand runs `npud bench`.
func benchCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("npud bench", flag.ContinueOnError)
	preset := fs.String("preset", "", "quick, standard or soak; other flags override it")
	var cfg bench.Config
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:11434", "base URL of the server")
	fs.StringVar(&cfg.API, "api", "openai", "openai (SSE, /v1/chat/completions) or ollama (NDJSON, /api/generate)")
	fs.StringVar(&cfg.Model, "model", "sim", "model to ask for")
	fs.StringVar(&cfg.APIKey, "api-key", getenv("NPUD_BENCH_API_KEY"), "bearer token (env NPUD_BENCH_API_KEY)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "streams at once")
	fs.IntVar(&cfg.Requests, "requests", 64, "requests in all (0: run for --duration)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "run this long instead of a number of requests")
	fs.DurationVar(&cfg.Ramp, "ramp", 0, "start the streams evenly over this long")
	fs.IntVar(&cfg.PromptTokens, "prompt-tokens", 64, "approximate prompt length in tokens (--endpoint embeddings: words per input)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 128, "output tokens asked for per request")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "per-request limit")
	fs.IntVar(&cfg.Turns, "turns", 0, "multi-turn conversations of this many turns per stream, each sending the whole history back (--api openai); each stream has its share of --requests; reports TTFT of first and later turns")
	fs.DurationVar(&cfg.ThinkTime, "think", 0, "pause between a conversation's turns")
	fs.IntVar(&cfg.TurnTokens, "turn-tokens", 0, "with --turns: approximate size of every question after the first (an agent's tool results); 0 = --prompt-tokens")
	fs.IntVar(&cfg.SystemTokens, "system-tokens", 0, "with --turns: a system message of about this many tokens, the same in every conversation")
	fs.StringVar(&cfg.Endpoint, "endpoint", bench.EndpointChat, "chat (streaming generation) or embeddings (/v1/embeddings, --api openai)")
	fs.IntVar(&cfg.Inputs, "inputs", 256, "with --endpoint embeddings: texts in the fixed set; a run of --requests cycles through them (default: one pass)")
	fs.IntVar(&cfg.Batch, "batch", 32, "with --endpoint embeddings: texts per request")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "with --endpoint embeddings: seed of the texts' generator (the same as genai_embed_bench.py's)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	rest, code := parseCommandFlags(fs, "npud bench", args, stdout, stderr, func() { fmt.Fprint(stdout, benchUsage) })
	if code >= 0 {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "npud bench takes no arguments, got %q (npud bench -h lists its flags)\n", strings.Join(rest, " "))
		return 2
	}
	if *preset != "" {
		p, ok := bench.Preset(*preset)
		if !ok {
			fmt.Fprintf(stderr, "npud bench: unknown preset %q (quick, standard, soak)\n", *preset)
			return 2
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["concurrency"] {
			cfg.Concurrency = p.Concurrency
		}
		if !set["requests"] {
			cfg.Requests = p.Requests
		}
		if !set["duration"] {
			cfg.Duration = p.Duration
		}
		if !set["prompt-tokens"] {
			cfg.PromptTokens = p.PromptTokens
		}
		if !set["max-tokens"] {
			cfg.MaxTokens = p.MaxTokens
		}
	}
	if cfg.Endpoint == bench.EndpointEmbeddings && cfg.Batch > 0 {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["requests"] && *preset == "" {
			cfg.Requests = (cfg.Inputs + cfg.Batch - 1) / cfg.Batch // one pass over the inputs
		}
	}
	if cfg.Duration > 0 {
		cfg.Requests = 0
	}
	var progress func(int)
	if isTerminal(stderr) && !*asJSON {
		start := time.Now()
		progress = func(done int) { drawProgress(stderr, done, cfg.Requests, time.Since(start), cfg.Duration) }
	}
	samples, elapsed, err := bench.Run(ctx, cfg, progress)
	if progress != nil {
		fmt.Fprintln(stderr)
	}
	if err != nil && len(samples) == 0 {
		fmt.Fprintf(stderr, "npud bench: %v\n", err)
		return 1
	}
	report := bench.Summarise(cfg, samples, elapsed)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	} else {
		report.WriteTable(stdout)
	}
	if report.Succeeded == 0 {
		return 1
	}
	return 0
}

// isTerminal reports whether w (a writer or a reader) is a character
// device: a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func drawProgress(w io.Writer, done, total int, elapsed, duration time.Duration) {
	frac := 0.0
	switch {
	case total > 0:
		frac = float64(done) / float64(total)
	case duration > 0:
		frac = min(1, elapsed.Seconds()/duration.Seconds())
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(w, "\r[%s%s] %3.0f%%  %d requests  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100, done, elapsed.Round(time.Second))
}
