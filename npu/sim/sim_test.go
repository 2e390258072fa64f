package sim

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/serve"
	"github.com/npud/npud/wire/errclass"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func seed(n int64) *int64 { return &n }

// recorder is a sink that keeps every chunk and answers from a script.
type recorder struct {
	mu       sync.Mutex
	chunks   []string
	statuses []npu.Status
	answer   func(n int) npu.Status // n: 1-based call number; nil answers Running
}

func (r *recorder) sink(text string) npu.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, text)
	st := npu.Running
	if r.answer != nil {
		st = r.answer(len(r.chunks))
	}
	r.statuses = append(r.statuses, st)
	return st
}

// recordingEngine wraps an engine and records, for each Generate call, what
// it handed the bridge's sink and what the sink answered.
type recordingEngine struct {
	npu.Engine
	mu   sync.Mutex
	recs []*recorder
}

func (e *recordingEngine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	rec := &recorder{}
	e.mu.Lock()
	e.recs = append(e.recs, rec)
	e.mu.Unlock()
	return e.Engine.Generate(ctx, req, func(text string) npu.Status {
		st := sink(text)
		rec.mu.Lock()
		rec.chunks = append(rec.chunks, text)
		rec.statuses = append(rec.statuses, st)
		rec.mu.Unlock()
		return st
	})
}

// calls returns what the i-th Generate call sent and was answered.
func (e *recordingEngine) calls(t *testing.T, i int) ([]string, []npu.Status) {
	t.Helper()
	e.mu.Lock()
	require.Greater(t, len(e.recs), i)
	rec := e.recs[i]
	e.mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.chunks...), append([]npu.Status(nil), rec.statuses...)
}

func newRouter(t *testing.T, cfg Config, limits serve.StreamLimits) (*serve.Router, *recordingEngine) {
	t.Helper()
	e := &recordingEngine{Engine: New(cfg)}
	if limits == (serve.StreamLimits{}) {
		limits = serve.StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 5 * time.Second}
	}
	r := serve.NewEngineRouter(e, serve.PoolConfig{MaxQueue: 4, Stream: limits}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		r.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, r.Wait(ctx), "every engine call returns")
	})
	return r, e
}

// stream runs req through r and returns the text, the result and the error.
func stream(t *testing.T, r *serve.Router, req *npu.Request) (string, npu.Result, error) {
	t.Helper()
	s, err := r.Start(req)
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return b.String(), npu.Result{}, err
		}
		require.True(t, utf8.ValidString(ev.Text))
		b.WriteString(ev.Text)
		if ev.Done {
			return b.String(), ev.Result, nil
		}
	}
}

func joined(seedN int64, prompt string, n int) string {
	return strings.Join(Tokens(seedN, prompt)[:n], "")
}

func TestTextIsDeterministic(t *testing.T) {
	tests := []struct {
		seed   int64
		prompt string
	}{
		{0, ""},
		{1, "p"},
		{42, "Why is the sky blue?"},
		{-7, "日本語のプロンプト"},
	}
	for _, tc := range tests {
		text := Text(tc.seed, tc.prompt)
		assert.Equal(t, text, Text(tc.seed, tc.prompt), "same seed and prompt, same text")
		assert.Equal(t, text, strings.Join(Tokens(tc.seed, tc.prompt), ""))
		assert.True(t, utf8.ValidString(text))
		n := len(Tokens(tc.seed, tc.prompt))
		assert.True(t, n >= 32 && n < 128, "%d tokens", n)
	}
}

func TestTextDiffersBetweenSeedsAndPrompts(t *testing.T) {
	seen := map[string]int64{}
	for s := range int64(50) {
		text := Text(s, "the same prompt")
		prev, dup := seen[text]
		assert.False(t, dup, "seeds %d and %d give the same text", prev, s)
		seen[text] = s
	}
	assert.NotEqual(t, Text(1, "p"), Text(1, "q"), "the prompt changes the text")
}

func TestStreamMaxTokens(t *testing.T) {
	const prompt = "hello"
	total := len(Tokens(3, prompt))
	tests := []struct {
		name      string
		maxTokens int
		want      int
		reason    npu.FinishReason
	}{
		{"one token", 1, 1, npu.FinishLength},
		{"a few", 7, 7, npu.FinishLength},
		{"one short of the end", total - 1, total - 1, npu.FinishLength},
		{"exactly the answer", total, total, npu.FinishStop},
		{"more than the answer", total + 10, total, npu.FinishStop},
		{"no limit", 0, total, npu.FinishStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRouter(t, Config{}, serve.StreamLimits{})
			text, res, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: prompt, MaxTokens: tc.maxTokens, Sampling: npu.Sampling{Seed: seed(3)}})
			require.NoError(t, err)
			assert.Equal(t, joined(3, prompt, tc.want), text)
			assert.Equal(t, tc.reason, res.FinishReason)
			assert.Equal(t, tc.want, res.CompletionTokens)
			assert.Equal(t, CountTokens(prompt), res.PromptTokens)
		})
	}
}

func TestStreamChatMessages(t *testing.T) {
	req := &npu.Request{Model: ModelID, Messages: []npu.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}
	assert.Equal(t, "system: be brief\nuser: hi\n", PromptText(req))
	r, _ := newRouter(t, Config{}, serve.StreamLimits{})
	text, res, err := stream(t, r, req)
	require.NoError(t, err)
	assert.Equal(t, Text(0, PromptText(req)), text)
	assert.Equal(t, CountTokens(PromptText(req)), res.PromptTokens)
}

// seedWithMultiByte finds a seed whose answer has multi-byte characters.
func seedWithMultiByte(t *testing.T, prompt string) int64 {
	t.Helper()
	for s := range int64(100) {
		if strings.ContainsFunc(Text(s, prompt), func(r rune) bool { return r >= utf8.RuneSelf }) {
			return s
		}
	}
	t.Fatal("no seed gives a multi-byte character")
	return 0
}

func TestSplitRunes(t *testing.T) {
	const prompt = "p"
	s := seedWithMultiByte(t, prompt)
	r, e := newRouter(t, Config{Faults: func(*npu.Request) Fault { return Fault{SplitRunes: true} }}, serve.StreamLimits{})
	text, _, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: prompt, Sampling: npu.Sampling{Seed: &s}})
	require.NoError(t, err)
	assert.Equal(t, Text(s, prompt), text, "the bridge reassembles the characters")

	chunks, _ := e.calls(t, 0)
	split := 0
	for _, c := range chunks {
		if !utf8.ValidString(c) {
			split++
		}
	}
	assert.Positive(t, split, "the engine did deliver half characters")
	assert.Equal(t, Text(s, prompt), strings.Join(chunks, ""))
	multi := 0
	for _, tok := range Tokens(s, prompt) {
		if !isASCII(tok) {
			multi++
		}
	}
	assert.Len(t, chunks, len(Tokens(s, prompt))+multi, "a token with a multi-byte character takes two callbacks")
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func TestErrorAtToken(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		r, e := newRouter(t, Config{Faults: func(*npu.Request) Fault { return Fault{ErrorAtToken: n} }}, serve.StreamLimits{})
		text, _, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: "p"})
		var engineErr *npu.EngineError
		require.ErrorAs(t, err, &engineErr, "token %d", n)
		assert.Equal(t, "sim", engineErr.Engine)
		assert.Equal(t, joined(0, "p", n-1), text, "the tokens before the fault arrive first")
		chunks, _ := e.calls(t, 0)
		assert.Len(t, chunks, n-1)
	}
}

func TestStall(t *testing.T) {
	const prompt = "p"
	t.Run("until the stream is cancelled", func(t *testing.T) {
		r, e := newRouter(t, Config{Faults: func(*npu.Request) Fault { return Fault{StallAtToken: 3} }}, serve.StreamLimits{})
		s, err := r.Start(&npu.Request{Model: ModelID, Prompt: prompt})
		require.NoError(t, err)
		defer s.Close()
		want := joined(0, prompt, 2)
		var got string
		for got != want {
			ev, err := s.Next(context.Background())
			require.NoError(t, err)
			got += ev.Text
			require.True(t, strings.HasPrefix(want, got), "got %q", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err = s.Next(ctx)
		require.ErrorIs(t, err, npu.ErrClientGone, "nothing came while the engine stalled")

		waitUntil(t, func() bool { return r.Running() == 0 })
		chunks, statuses := e.calls(t, 0)
		tokens := Tokens(0, prompt)
		assert.Equal(t, tokens[:4], chunks, "two tokens, the one that met Cancel, and the flush")
		assert.Equal(t, []npu.Status{npu.Running, npu.Running, npu.Cancel, npu.Cancel}, statuses)
	})
	t.Run("for a while", func(t *testing.T) {
		r, _ := newRouter(t, Config{Faults: func(*npu.Request) Fault { return Fault{StallAtToken: 3, StallFor: 20 * time.Millisecond} }}, serve.StreamLimits{})
		begin := time.Now()
		text, _, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: prompt})
		require.NoError(t, err)
		assert.Equal(t, Text(0, prompt), text)
		assert.GreaterOrEqual(t, time.Since(begin), 20*time.Millisecond)
	})
	t.Run("past the token timeout", func(t *testing.T) {
		r, _ := newRouter(t, Config{Faults: func(*npu.Request) Fault { return Fault{StallAtToken: 3} }},
			serve.StreamLimits{MaxPendingBytes: 1 << 20, TokenTimeout: 20 * time.Millisecond})
		text, _, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: prompt})
		require.ErrorIs(t, err, npu.ErrTokenTimeout)
		assert.Equal(t, joined(0, prompt, 2), text)
	})
}

func TestContextLength(t *testing.T) {
	prompt := strings.Repeat("x", 400) // 100 tokens
	require.Equal(t, 100, CountTokens(prompt))
	tests := []struct {
		name       string
		contextLen int
		maxTokens  int
		fits       bool
		wantTokens int // when it fits
		clamped    int // the limit it ran with, when lowered
	}{
		{"prompt longer than the context", 99, 0, false, 0, 0},
		{"prompt fills the context: no room for one token", 100, 0, false, 0, 0},
		{"prompt fills the context, with a limit", 100, 5, false, 0, 0},
		{"no limit: the room left", 110, 0, true, 10, 0},
		{"max tokens exactly fit", 128, 28, true, 28, 0},
		{"one token over: clamped", 128, 29, true, 28, 28},
		// Issue 31: OpenCode's max_tokens 32000 on every request.
		{"far over: clamped", 128, 32000, true, 28, 28},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ContextLength: tc.contextLen}
			req := &npu.Request{Model: ModelID, Prompt: prompt, MaxTokens: tc.maxTokens}
			var rec recorder
			res, err := New(cfg).Generate(context.Background(), req, rec.sink)
			if tc.fits {
				require.NoError(t, err)
				assert.Equal(t, tc.wantTokens, res.CompletionTokens)
				assert.Len(t, rec.chunks, tc.wantTokens)
				assert.Equal(t, npu.FinishLength, res.FinishReason, "cut short by the context")
				assert.Equal(t, tc.clamped, res.MaxTokensClamped)

				// Through the router the clamp is known when the request is
				// admitted, before the first event (a writer's header).
				r, _ := newRouter(t, cfg, serve.StreamLimits{})
				s, err := r.Start(&npu.Request{Model: ModelID, Prompt: prompt, MaxTokens: tc.maxTokens})
				require.NoError(t, err)
				defer s.Close()
				assert.Equal(t, tc.clamped, s.MaxTokensClamped())
				a, err := npu.CollectAnswer(context.Background(), s.Next)
				text, res := a.Text, a.Result
				require.NoError(t, err)
				assert.Equal(t, joined(0, prompt, tc.wantTokens), text)
				assert.Equal(t, tc.wantTokens, res.CompletionTokens)
				assert.Equal(t, npu.FinishLength, res.FinishReason)
				assert.Equal(t, tc.clamped, res.MaxTokensClamped)
				assert.Equal(t, tc.clamped, s.Stats().MaxTokensClamped)
				return
			}
			require.ErrorIs(t, err, npu.ErrContextLength)
			assert.False(t, errclass.Of(err).Retryable)
			assert.Empty(t, rec.chunks, "refused before any text")

			r, e := newRouter(t, cfg, serve.StreamLimits{})
			_, err = r.Start(req)
			require.ErrorIs(t, err, npu.ErrContextLength, "refused when admitted, before anything is queued")
			e.mu.Lock()
			assert.Empty(t, e.recs, "the engine never ran")
			e.mu.Unlock()
		})
	}
}

func TestSinkCalledOnceMoreAfterStop(t *testing.T) {
	t.Run("sink answers", func(t *testing.T) {
		tests := []struct {
			answer npu.Status
			reason npu.FinishReason
		}{
			{npu.Stop, npu.FinishStop},
			{npu.Cancel, npu.FinishCancelled},
		}
		for _, tc := range tests {
			t.Run(tc.answer.String(), func(t *testing.T) {
				rec := recorder{answer: func(n int) npu.Status {
					if n >= 3 {
						return tc.answer
					}
					return npu.Running
				}}
				res, err := New(Config{}).Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "p"}, rec.sink)
				require.NoError(t, err)
				assert.Equal(t, Tokens(0, "p")[:4], rec.chunks, "three tokens, then the flush of the fourth")
				assert.Equal(t, tc.reason, res.FinishReason)
				assert.Equal(t, 4, res.CompletionTokens)
			})
		}
	})

	t.Run("no flush after the last token", func(t *testing.T) {
		total := len(Tokens(0, "p"))
		rec := recorder{answer: func(n int) npu.Status {
			if n == total {
				return npu.Stop
			}
			return npu.Running
		}}
		_, err := New(Config{}).Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "p"}, rec.sink)
		require.NoError(t, err)
		assert.Len(t, rec.chunks, total)
	})

	t.Run("stop string through the bridge", func(t *testing.T) {
		const prompt = "p"
		tokens := Tokens(0, prompt)
		text := Text(0, prompt)
		// A token from the middle whose text first occurs where it is.
		k, offset := -1, 0
		for i, tok := range tokens {
			if i >= 3 && i < len(tokens)-1 && strings.Index(text, tok) == offset {
				k = i
				break
			}
			offset += len(tok)
		}
		require.GreaterOrEqual(t, k, 0, "no usable stop token")

		r, e := newRouter(t, Config{}, serve.StreamLimits{})
		got, res, err := stream(t, r, &npu.Request{Model: ModelID, Prompt: prompt, Stop: []string{tokens[k]}})
		require.NoError(t, err)
		assert.Equal(t, joined(0, prompt, k), got, "the text before the stop string")
		assert.Equal(t, npu.FinishStop, res.FinishReason)

		chunks, statuses := e.calls(t, 0)
		require.Len(t, chunks, k+2, "the tokens up to the stop string, then one more call")
		assert.Equal(t, tokens[:k+2], chunks)
		assert.Equal(t, npu.Stop, statuses[k])
		assert.Equal(t, npu.Stop, statuses[k+1], "the flush after Stop is answered Stop")
	})
}

func TestTimings(t *testing.T) {
	const prompt = "12345678" // two tokens
	e := New(Config{TTFT: 5 * time.Millisecond, PromptTokenCost: 2 * time.Millisecond, ITL: time.Millisecond})
	var rec recorder
	res, err := e.Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: prompt, MaxTokens: 4}, rec.sink)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Timings.Prefill, 9*time.Millisecond, "TTFT plus the prompt's cost")
	assert.GreaterOrEqual(t, res.Timings.Decode, 3*time.Millisecond, "three gaps between four tokens")
}

func TestDescribesItselfAsSimulated(t *testing.T) {
	e := New(Config{})
	assert.True(t, e.Simulated())
	assert.Equal(t, "sim", e.Name())
	require.Len(t, e.Models(), 1)
	assert.Equal(t, ModelID, e.Models()[0].ID)
	assert.Contains(t, e.Models()[0].OwnedBy, "simulated")
	assert.Equal(t, 32768, e.Models()[0].ContextLength)
	assert.Equal(t, 1000, New(Config{ContextLength: 1000}).Models()[0].ContextLength)
}

func TestEmbedding(t *testing.T) {
	embedded, err := New(Config{}).Embed(context.Background(), ModelID, []string{"a b", "日本", "a b"}, false)
	require.NoError(t, err)
	vecs, tokens := embedded.Vectors, embedded.PromptTokens
	require.Len(t, vecs, 3)
	assert.Equal(t, CountTokens("a b")*2+CountTokens("日本"), tokens)
	assert.Equal(t, vecs[0], vecs[2], "the same text, the same vector")
	assert.NotEqual(t, vecs[0], vecs[1])
	for _, v := range vecs {
		require.Len(t, v, EmbeddingDims)
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		assert.InDelta(t, 1, math.Sqrt(norm), 1e-5, "L2-normalized")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		require.False(t, time.Now().After(deadline), "condition not met within 5s")
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkEngineOwnGaps measures the gaps the simulated engine itself
// produces between tokens with ITL 20 ms and 256 generations at once, so
// that docs/PERFORMANCE.md can subtract the engine's own timer jitter from
// what clients observe:
//
//	go test -run '^$' -bench EngineOwnGaps -benchtime 1x ./npu/sim/
func BenchmarkEngineOwnGaps(b *testing.B) {
	const streams, itl = 256, 20 * time.Millisecond
	e := New(Config{ITL: itl})
	for range b.N {
		var mu sync.Mutex
		var gaps []time.Duration
		var wg sync.WaitGroup
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last time.Time
				var mine []time.Duration
				_, _ = e.Generate(context.Background(), &npu.Request{Model: ModelID, Prompt: "gaps", MaxTokens: 32, Sampling: npu.Sampling{Seed: seed(int64(i))}},
					func(string) npu.Status {
						now := time.Now()
						if !last.IsZero() {
							mine = append(mine, now.Sub(last))
						}
						last = now
						return npu.Running
					})
				mu.Lock()
				gaps = append(gaps, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		slices.Sort(gaps)
		b.ReportMetric(float64(gaps[len(gaps)/2]-itl)/1e6, "p50-over-itl-ms")
		b.ReportMetric(float64(gaps[len(gaps)*99/100]-itl)/1e6, "p99-over-itl-ms")
	}
}

// The simulated model calls the tool the last user message names (the
// longest name that appears), else one it picks.
func TestPlannedCallTakesTheNamedTool(t *testing.T) {
	tools := []npu.Tool{{Name: "exec"}, {Name: "exec_command"}, {Name: "view_image"}}
	for _, tc := range []struct {
		name, last, want string
	}{
		{"named", "Use exec_command to read notes.txt", "exec_command"},
		{"another", "look with view_image", "view_image"},
		{"earlier user message only", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []npu.Message{{Role: "user", Content: "view_image please"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: tc.last}}
			req := &npu.Request{Messages: msgs, Tools: tools}
			got, ok := namedTool(req)
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, got.Name)
			call, ok := plannedCall(req, rngFor(0, "p"))
			require.True(t, ok)
			if tc.want != "" {
				assert.Equal(t, tc.want, call.Name)
			}
		})
	}
}

// The simulated model speaks every family npud parses: its call, written
// as the family writes it, comes back through the bridge as that call,
// with arguments that satisfy the tool's schema; it reasons only when its
// family does.
func TestSpeaksEveryFamily(t *testing.T) {
	tool := npu.Tool{Name: "get_weather", Parameters: []byte(
		`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"]}`)}
	for _, f := range chatfmt.Families() {
		t.Run(f.Name(), func(t *testing.T) {
			r, _ := newRouter(t, Config{Family: f.Name()}, serve.StreamLimits{})
			models := r.Models()
			require.Len(t, models, 1)
			assert.Equal(t, f.Name(), models[0].Details.ToolFormat)
			reasons := f.NewReasoningSplitter() != nil
			assert.Equal(t, reasons, models[0].Details.Thinking)
			think := reasons
			s, err := r.Start(&npu.Request{Model: ModelID, Sampling: npu.Sampling{Seed: seed(3)}, Think: &think, Tools: []npu.Tool{tool},
				Messages: []npu.Message{{Role: "user", Content: "weather in Oslo?"}}})
			require.NoError(t, err)
			defer s.Close()
			a, err := npu.CollectAnswer(t.Context(), s.Next)
			require.NoError(t, err)
			assert.Empty(t, a.Text)
			assert.Equal(t, reasons, a.Reasoning != "", "reasoning %q", a.Reasoning)
			require.Len(t, a.ToolCalls, 1)
			assert.Equal(t, "get_weather", a.ToolCalls[0].Name)
			assert.Empty(t, chatfmt.CheckArguments(a.ToolCalls[0].Arguments, tool.Parameters), a.ToolCalls[0].Arguments)
			assert.Equal(t, npu.FinishToolCalls, a.Result.FinishReason)
			assert.Empty(t, s.Stats().ToolCallProblems)
		})
	}
}
