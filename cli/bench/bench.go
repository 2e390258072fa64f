// Package bench is npud's load client: it drives any OpenAI-compatible (SSE)
// or Ollama-compatible (NDJSON) streaming endpoint, ours or anyone's, and
// measures what a client sees: time to first token, the gaps between
// chunks, time per output token, end-to-end time, tokens and errors.
//
// Definitions (as in docs/PERFORMANCE.md):
//   - TTFT: request sent → first chunk with non-empty content.
//   - ITL: the gap between consecutive content chunks of one stream.
//   - TPOT: (E2E − TTFT) / (tokens − 1), per request with 2+ tokens.
//   - E2E: request sent → end of the stream (its terminator).
//   - tokens: the server's completion-token count when it sends one
//     (usage, eval_count), else the number of content chunks.
package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npud/npud/npu/wirefmt/openaiwire"
)

// Config describes one run.
type Config struct {
	URL          string // base URL, e.g. http://127.0.0.1:11434
	API          string // "openai" or "ollama"
	Model        string
	APIKey       string
	Concurrency  int
	Requests     int           // total requests; 0 = run for Duration
	Duration     time.Duration // used when Requests is 0
	Ramp         time.Duration // spread the workers' starts over this long
	PromptTokens int           // approximate prompt length
	MaxTokens    int
	Timeout      time.Duration // per request; 0 = none
	// Turns > 0 makes a multi-turn workload (OpenAI API): each of the
	// Concurrency workers holds conversations of Turns turns, each turn
	// sending the whole history back (its earlier questions and the
	// answers it got) and a new question, after ThinkTime.
	Turns     int
	ThinkTime time.Duration
	// TurnTokens, when positive, is the size of every question after a
	// conversation's first (which has PromptTokens): an agent's task
	// first, then tool results, so the history grows by this much plus
	// the answer each turn.
	TurnTokens int
	// SystemTokens, when positive, starts every conversation with the
	// same system message of about this many tokens (an agent's
	// instructions and tool definitions), shared by all conversations.
	SystemTokens int
	// Endpoint is EndpointChat ("" too) or EndpointEmbeddings. An
	// embeddings run sends Inputs texts of about PromptTokens words each
	// (made by Inputs with Seed), Batch texts a request.
	Endpoint string
	Inputs   int
	Batch    int
	Seed     uint64
}

// Preset returns a named configuration: quick, standard or soak. Flags
// given with a preset override its values.
func Preset(name string) (Config, bool) {
	switch name {
	case "quick":
		return Config{Concurrency: 4, Requests: 32, PromptTokens: 32, MaxTokens: 64}, true
	case "standard":
		return Config{Concurrency: 32, Requests: 512, PromptTokens: 256, MaxTokens: 128}, true
	case "soak":
		return Config{Concurrency: 64, Duration: 10 * time.Minute, PromptTokens: 128, MaxTokens: 256}, true
	}
	return Config{}, false
}

// Sample is what one request measured.
type Sample struct {
	TTFT   time.Duration
	E2E    time.Duration
	Tokens int
	Gaps   []time.Duration
	Err    string // error kind; "" = success
	Turn   int    // the turn of its conversation (multi-turn workloads), from 1
	Cached int    // prompt tokens the server took from its cache (usage.prompt_tokens_details)
	Prompt int    // prompt tokens the server counted (usage.prompt_tokens)
	Inputs int    // texts embedded (embeddings runs)
	text   string // the answer, kept for multi-turn workloads' histories
}

// Run drives the endpoint and returns every sample. progress, if not nil,
// is called after each request with the count done, one call at a time.
func Run(ctx context.Context, cfg Config, progress func(done int)) ([]Sample, time.Duration, error) {
	if cfg.API != "openai" && cfg.API != "ollama" {
		return nil, 0, fmt.Errorf("--api %q: want openai or ollama", cfg.API)
	}
	if cfg.Concurrency <= 0 || (cfg.Requests <= 0 && cfg.Duration <= 0) {
		return nil, 0, errors.New("need --concurrency > 0 and --requests or --duration")
	}
	switch cfg.Endpoint {
	case "", EndpointChat:
	case EndpointEmbeddings:
		return runEmbeddings(ctx, cfg, progress)
	default:
		return nil, 0, fmt.Errorf("--endpoint %q: want chat or embeddings", cfg.Endpoint)
	}
	if cfg.Turns > 0 && cfg.API != "openai" {
		return nil, 0, errors.New("--turns needs --api openai (chat messages)")
	}
	client, closeIdle := httpClient(cfg)
	defer closeIdle()
	body := requestBody(cfg)
	runCtx, cancel := runContext(ctx, cfg)
	defer cancel()
	var (
		issued atomic.Int64
		got    = samples{progress: progress}
		wg     sync.WaitGroup
	)
	start := time.Now()
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Ramp > 0 {
				select {
				case <-time.After(cfg.Ramp * time.Duration(w) / time.Duration(cfg.Concurrency)):
				case <-runCtx.Done():
					return
				}
			}
			var history []map[string]string // a multi-turn worker's conversation
			turn, conversation := 0, 0
			// A multi-turn worker is one client holding its own
			// conversations: it has its share of the requests, so that
			// a worker served quickly does not take turns from others.
			share := -1
			if cfg.Turns > 0 && cfg.Requests > 0 {
				share = cfg.Requests / cfg.Concurrency
				if w < cfg.Requests%cfg.Concurrency {
					share++
				}
			}
			for runCtx.Err() == nil {
				if share >= 0 {
					if share == 0 {
						return
					}
					share--
				} else if cfg.Requests > 0 && issued.Add(1) > int64(cfg.Requests) {
					return
				}
				reqBody := body
				if cfg.Turns > 0 {
					if turn == cfg.Turns {
						history, turn = nil, 0
						conversation++
					}
					if turn > 0 && cfg.ThinkTime > 0 {
						select {
						case <-time.After(cfg.ThinkTime):
						case <-runCtx.Done():
							return
						}
					}
					turn++
					size := cfg.PromptTokens
					if turn > 1 && cfg.TurnTokens > 0 {
						size = cfg.TurnTokens
					}
					if turn == 1 && cfg.SystemTokens > 0 {
						history = append(history, map[string]string{"role": "system",
							"content": "shared instructions: " + question(cfg.SystemTokens)})
					}
					history = append(history, map[string]string{"role": "user",
						"content": fmt.Sprintf("worker %d conversation %d turn %d: %s", w, conversation, turn, question(size))})
					reqBody = chatBody(cfg, history)
				}
				s := one(runCtx, client, cfg, reqBody)
				if cfg.Turns > 0 {
					s.Turn = turn
					if s.Err != "" {
						history, turn = nil, cfg.Turns // start a new conversation
					} else {
						history = append(history, map[string]string{"role": "assistant", "content": s.text})
					}
				}
				s.text = "" // only a conversation keeps it, in its history
				if cfg.Requests == 0 && runCtx.Err() != nil && s.Err != "" {
					return // cut by the end of the run, not a failure
				}
				got.add(s)
			}
		}()
	}
	wg.Wait()
	return got.list, time.Since(start), ctx.Err()
}

// httpClient is the client of a run, keeping a connection per worker, and
// what closes its idle connections.
func httpClient(cfg Config) (*http.Client, func()) {
	transport := &http.Transport{
		MaxIdleConns: cfg.Concurrency, MaxIdleConnsPerHost: cfg.Concurrency,
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression: true,
	}
	return &http.Client{Transport: transport}, transport.CloseIdleConnections
}

// question is a prompt of about n tokens.
func question(n int) string { return strings.TrimSpace(strings.Repeat("abc ", max(n, 1))) }

// chatBody is a streaming chat request with messages.
func chatBody(cfg Config, messages []map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"model": cfg.Model, "stream": true, "max_tokens": cfg.MaxTokens,
		"stream_options": map[string]any{"include_usage": true}, "messages": messages})
	return b
}

// requestBody builds the request once: every request is the same.
func requestBody(cfg Config) []byte {
	prompt := strings.TrimSpace(strings.Repeat("abc ", max(cfg.PromptTokens, 1)))
	var v any
	if cfg.API == "openai" {
		v = map[string]any{"model": cfg.Model, "stream": true, "max_tokens": cfg.MaxTokens,
			"stream_options": map[string]any{"include_usage": true},
			"messages":       []map[string]string{{"role": "user", "content": prompt}}}
	} else {
		v = map[string]any{"model": cfg.Model, "stream": true, "prompt": prompt,
			"options": map[string]any{"num_predict": cfg.MaxTokens}}
	}
	b, _ := json.Marshal(v)
	return b
}

// one runs a request and measures it.
func one(ctx context.Context, client *http.Client, cfg Config, body []byte) Sample {
	ctx, cancel := requestContext(ctx, cfg)
	defer cancel()
	path := "/v1/chat/completions"
	if cfg.API == "ollama" {
		path = "/api/generate"
	}
	resp, sent, failed := post(ctx, client, cfg, path, body)
	if resp == nil {
		return failed
	}
	defer resp.Body.Close()
	var s Sample
	if cfg.API == "openai" {
		s = readSSE(resp.Body, sent)
	} else {
		s = readNDJSON(resp.Body, sent)
	}
	if s.Err == "" && ctx.Err() != nil {
		s.Err = "timeout"
	}
	return s
}

// requestContext bounds one request by the run's --timeout, if any.
func requestContext(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	if cfg.Timeout > 0 {
		return context.WithTimeout(ctx, cfg.Timeout)
	}
	return ctx, func() {}
}

// post sends body to path with the run's key: a 200's response (its body
// for the caller to read and close) and when it was sent, or nil and the
// Sample that names the failure.
func post(ctx context.Context, client *http.Client, cfg Config, path string, body []byte) (*http.Response, time.Time, Sample) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(cfg.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, time.Time{}, Sample{Err: "request"}
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, sent, Sample{Err: transportKind(err)}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		return nil, sent, Sample{Err: fmt.Sprintf("http_%d", resp.StatusCode)}
	}
	return resp, sent, Sample{}
}

// samples collects a run's samples from its workers, telling progress
// (one call at a time) of each.
type samples struct {
	mu       sync.Mutex
	list     []Sample
	progress func(done int)
}

func (c *samples) add(s Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
	if c.progress != nil {
		c.progress(len(c.list))
	}
}

// runContext is the run's context: cut at cfg.Duration when the run is
// not a number of requests.
func runContext(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	if cfg.Requests == 0 {
		return context.WithTimeout(ctx, cfg.Duration)
	}
	return ctx, func() {}
}

func transportKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "connect"
}

// tracker records the timing of content chunks.
type tracker struct {
	sent, last time.Time
	s          Sample
	chunks     int
	text       strings.Builder
}

func (t *tracker) content(text string) {
	if text == "" {
		return
	}
	t.text.WriteString(text)
	now := time.Now()
	if t.chunks == 0 {
		t.s.TTFT = now.Sub(t.sent)
	} else {
		t.s.Gaps = append(t.s.Gaps, now.Sub(t.last))
	}
	t.last = now
	t.chunks++
}

func (t *tracker) finish(tokens int, errKind string) Sample {
	t.s.E2E = time.Since(t.sent)
	t.s.text = t.text.String()
	t.s.Tokens = tokens
	if tokens == 0 {
		t.s.Tokens = t.chunks
	}
	t.s.Err = errKind
	return t.s
}

func readSSE(r io.Reader, sent time.Time) Sample {
	t := &tracker{sent: sent}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	tokens := 0
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			return t.finish(tokens, "")
		}
		var chunk openaiwire.ChatChunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return t.finish(tokens, "bad_chunk")
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			var e struct {
				Code string `json:"code"`
			}
			if json.Unmarshal(chunk.Error, &e) != nil {
				return t.finish(tokens, "bad_chunk")
			}
			return t.finish(tokens, "stream_"+nonEmpty(e.Code, "error"))
		}
		if chunk.Usage != nil {
			tokens = chunk.Usage.CompletionTokens
			t.s.Prompt = chunk.Usage.PromptTokens
			if chunk.Usage.PromptDetails != nil {
				t.s.Cached = chunk.Usage.PromptDetails.CachedTokens
			}
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != nil {
			t.content(*chunk.Choices[0].Delta.Content)
		}
	}
	return t.finish(tokens, "truncated") // ended without [DONE]
}

func readNDJSON(r io.Reader, sent time.Time) Sample {
	t := &tracker{sent: sent}
	dec := json.NewDecoder(r)
	for {
		var line struct {
			Response  string `json:"response"`
			Done      bool   `json:"done"`
			EvalCount int    `json:"eval_count"`
			Error     string `json:"error"`
		}
		if err := dec.Decode(&line); err != nil {
			return t.finish(0, "truncated") // ended without done: true
		}
		if line.Error != "" {
			return t.finish(0, "stream_error")
		}
		t.content(line.Response)
		if line.Done {
			return t.finish(line.EvalCount, "")
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Stats are the percentiles of one measure, in milliseconds.
type Stats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// Report summarises a run.
type Report struct {
	Requests      int            `json:"requests"`
	Succeeded     int            `json:"succeeded"`
	Errors        map[string]int `json:"errors"`
	Seconds       float64        `json:"seconds"`
	RequestsPerS  float64        `json:"requests_per_second"`
	TokensPerS    float64        `json:"output_tokens_per_second"`
	OutputTokens  int            `json:"output_tokens"`
	TTFT          Stats          `json:"ttft"`
	ITL           Stats          `json:"itl"`
	TPOT          Stats          `json:"tpot"`
	EndToEnd      Stats          `json:"e2e"`
	Concurrency   int            `json:"concurrency"`
	API           string         `json:"api"`
	URL           string         `json:"url"`
	MaxTokens     int            `json:"max_tokens"`
	PromptTokens  int            `json:"prompt_tokens"`
	FirstErrorsAt []string       `json:"-"`
	// Multi-turn workloads: TTFT of first turns and of later ones, and
	// the prompt tokens the server took from its cache.
	Turns        int   `json:"turns,omitempty"`
	TTFTFirst    Stats `json:"ttft_first_turn"`
	TTFTLater    Stats `json:"ttft_later_turns"`
	CachedTokens int   `json:"cached_prompt_tokens,omitempty"`
	// The prompts of later turns as the server counted them (the whole
	// history each time): mean and largest.
	LaterPromptMean int `json:"later_turn_prompt_tokens_mean,omitempty"`
	LaterPromptMax  int `json:"later_turn_prompt_tokens_max,omitempty"`
	// Embeddings runs: the texts embedded and their tokens (the server's
	// usage.prompt_tokens), in all and per second, and the batch size.
	Endpoint        string  `json:"endpoint"`
	Batch           int     `json:"batch,omitempty"`
	InputsEmbedded  int     `json:"inputs,omitempty"`
	InputsPerS      float64 `json:"inputs_per_second,omitempty"`
	InputTokens     int     `json:"input_tokens,omitempty"`
	InputTokensPerS float64 `json:"input_tokens_per_second,omitempty"`
}

// Summarise computes the report of samples taken over elapsed.
func Summarise(cfg Config, samples []Sample, elapsed time.Duration) Report {
	r := Report{Requests: len(samples), Errors: map[string]int{}, Seconds: elapsed.Seconds(),
		Concurrency: cfg.Concurrency, API: cfg.API, URL: cfg.URL, MaxTokens: cfg.MaxTokens, PromptTokens: cfg.PromptTokens}
	r.Turns = cfg.Turns
	r.Endpoint = cmp.Or(cfg.Endpoint, EndpointChat)
	if r.Endpoint == EndpointEmbeddings {
		r.Batch, r.MaxTokens = cfg.Batch, 0
	}
	var ttft, itl, tpot, e2e, first, later []time.Duration
	laterPrompts := 0
	for _, s := range samples {
		if s.Err != "" {
			r.Errors[s.Err]++
			continue
		}
		r.Succeeded++
		r.InputsEmbedded += s.Inputs
		if r.Endpoint == EndpointEmbeddings {
			r.InputTokens += s.Prompt
		}
		r.OutputTokens += s.Tokens
		r.CachedTokens += s.Cached
		if s.TTFT > 0 {
			ttft = append(ttft, s.TTFT)
			switch {
			case s.Turn == 1:
				first = append(first, s.TTFT)
			case s.Turn > 1:
				later = append(later, s.TTFT)
				laterPrompts += s.Prompt
				r.LaterPromptMax = max(r.LaterPromptMax, s.Prompt)
			}
		}
		itl = append(itl, s.Gaps...)
		e2e = append(e2e, s.E2E)
		if s.Tokens > 1 && s.TTFT > 0 {
			tpot = append(tpot, (s.E2E-s.TTFT)/time.Duration(s.Tokens-1))
		}
	}
	if elapsed > 0 {
		r.RequestsPerS = float64(r.Succeeded) / elapsed.Seconds()
		r.TokensPerS = float64(r.OutputTokens) / elapsed.Seconds()
		r.InputsPerS = float64(r.InputsEmbedded) / elapsed.Seconds()
		r.InputTokensPerS = float64(r.InputTokens) / elapsed.Seconds()
	}
	r.TTFT, r.ITL, r.TPOT, r.EndToEnd = stats(ttft), stats(itl), stats(tpot), stats(e2e)
	r.TTFTFirst, r.TTFTLater = stats(first), stats(later)
	if len(later) > 0 {
		r.LaterPromptMean = laterPrompts / len(later)
	}
	return r
}

// writeOutcomes writes the count of requests, successes and errors by kind.
func (r Report) writeOutcomes(w io.Writer) {
	fmt.Fprintf(w, "requests %d  ok %d  errors %d", r.Requests, r.Succeeded, r.Requests-r.Succeeded)
	if len(r.Errors) > 0 {
		kinds := make([]string, 0, len(r.Errors))
		for k, n := range r.Errors {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, " (%s)", strings.Join(kinds, ", "))
	}
}

func stats(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	at := func(q float64) float64 { return ms(d[min(len(d)-1, int(q*float64(len(d))))]) }
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return Stats{Count: len(d), P50: at(.50), P90: at(.90), P99: at(.99), Max: ms(d[len(d)-1]), Mean: ms(sum / time.Duration(len(d)))}
}

// WriteTable writes the report for people.
func (r Report) WriteTable(w io.Writer) {
	if r.Endpoint == EndpointEmbeddings {
		r.writeEmbeddingsTable(w)
		return
	}
	fmt.Fprintf(w, "%s %s  concurrency %d  prompt ~%d tokens  max_tokens %d\n", r.API, r.URL, r.Concurrency, r.PromptTokens, r.MaxTokens)
	r.writeOutcomes(w)
	fmt.Fprintf(w, "\n%.1f s  %.2f req/s  %.1f output tokens/s  (%d tokens)\n\n", r.Seconds, r.RequestsPerS, r.TokensPerS, r.OutputTokens)
	fmt.Fprintf(w, "%-6s %10s %10s %10s %10s %10s %8s\n", "ms", "p50", "p90", "p99", "max", "mean", "n")
	for _, row := range []struct {
		name string
		s    Stats
	}{{"TTFT", r.TTFT}, {"ITL", r.ITL}, {"TPOT", r.TPOT}, {"E2E", r.EndToEnd}} {
		fmt.Fprintf(w, "%-6s %10.2f %10.2f %10.2f %10.2f %10.2f %8d\n", row.name, row.s.P50, row.s.P90, row.s.P99, row.s.Max, row.s.Mean, row.s.Count)
	}
	if r.Turns > 0 {
		fmt.Fprintf(w, "\n%d-turn conversations; %d prompt tokens came from the server's cache; later turns' prompts %d tokens on average, at most %d\n",
			r.Turns, r.CachedTokens, r.LaterPromptMean, r.LaterPromptMax)
		for _, row := range []struct {
			name string
			s    Stats
		}{{"TTFT turn 1", r.TTFTFirst}, {"TTFT turn 2+", r.TTFTLater}} {
			fmt.Fprintf(w, "%-12s %10.2f %10.2f %10.2f %10.2f %10.2f %8d\n", row.name, row.s.P50, row.s.P90, row.s.P99, row.s.Max, row.s.Mean, row.s.Count)
		}
	}
}
