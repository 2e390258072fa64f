// Package sim is a simulated engine: it makes up deterministic text so that
// npud runs, and can be tested, anywhere. It does no inference. Everything it
// describes about itself says it is simulated.
//
// The text depends only on the request's seed and prompt; max tokens, stop
// strings and deadlines only cut it short. A request that asks for
// structured output gets a document valid against its format instead
// (Document), a few bytes a token. It emits from its own goroutine,
// as OpenVINO does from a native thread, and calls the sink once more after
// a Stop or Cancel, as OpenVINO's final flush does.
package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// ModelID is the one model the simulated engine serves.
const ModelID = "sim"

// OwnedBy is what /v1/models reports as the owner of the simulated model.
const OwnedBy = "npud-simulated"

// Config sets the simulated timings and test hooks.
type Config struct {
	// TTFT is the fixed time to the first token.
	TTFT time.Duration
	// PromptTokenCost is added to TTFT per prompt token (prefill cost).
	PromptTokenCost time.Duration
	// ITL is the time between tokens.
	ITL time.Duration
	// ContextLength of the simulated model; default 32768.
	ContextLength int
	// Family names the model family (npu/chatfmt) whose format the
	// simulated model writes its tool calls in, and which says whether it
	// reasons; "" (or a name chatfmt does not know) is Qwen's, Hermes.
	Family string
	// Faults, when set, chooses faults to inject into a request (tests).
	Faults func(*npu.Request) Fault
	// ReloadFault, when set, makes Reload fail with its error (tests).
	ReloadFault func(model string) error
	// HearWindow, when set, runs before each 30-second window of a
	// transcription is heard (tests): it may hold the engine there, or
	// fail the transcription with its error.
	HearWindow func(ctx context.Context, window int) error
}

// Fault is a failure to inject into one generation.
type Fault struct {
	// ErrorAtToken > 0 fails the generation instead of emitting that token
	// (1-based), after the tokens before it were emitted.
	ErrorAtToken int
	// StallAtToken > 0 stops producing before that token (1-based) for
	// StallFor, or until the request is abandoned when StallFor is 0.
	StallAtToken int
	StallFor     time.Duration
	// SplitRunes delivers every token that holds a multi-byte character in
	// two callbacks, cut inside its first such character, as a byte-level
	// detokenizer can.
	SplitRunes bool
}

var _ npu.Engine = (*Engine)(nil)

// Engine is the simulated engine.
type Engine struct {
	npu.Unsupported // it places no models on devices: they serve at any time

	cfg     Config
	family  chatfmt.Family // never nil
	created time.Time
	cache   convCache
}

// New returns a simulated engine.
func New(cfg Config) *Engine {
	if cfg.ContextLength == 0 {
		cfg.ContextLength = 32768
	}
	family := chatfmt.Lookup(cfg.Family)
	if family == nil {
		family = chatfmt.Hermes{}
	}
	return &Engine{cfg: cfg, family: family, created: time.Now()}
}

func (e *Engine) Name() string    { return "sim" }
func (e *Engine) Simulated() bool { return true }

// Describe implements npu.Engine.
func (e *Engine) Describe() npu.Features {
	return npu.Features{Reloads: true, Embeds: true, Reranks: true, Transcribes: true, CountsPrompts: true, ExactCounts: true}
}

func (e *Engine) Models() []npu.ModelInfo {
	// The simulated model reasons when asked (Request.Think) if its family
	// does, calls tools in its family's format, "sees" images and "hears"
	// audio: clients' thinking, tool, vision and speech paths can be
	// tested end to end.
	return []npu.ModelInfo{{ID: ModelID, OwnedBy: OwnedBy, Created: e.created, ContextLength: e.cfg.ContextLength,
		Details: npu.ModelDetails{Thinking: e.reasons(), ToolFormat: e.family.Name(), Vision: true, Speech: true}}}
}

// reasons reports whether the simulated model's family writes reasoning
// apart from its answer.
func (e *Engine) reasons() bool { return e.family.NewReasoningSplitter() != nil }

// Reload implements npu.Engine. The simulated model has no files to read
// again, so a reload only checks that the model exists.
func (e *Engine) Reload(_ context.Context, model string) error {
	if model != ModelID {
		return fmt.Errorf("simulated engine: no model %q: %w", model, npu.ErrModelNotFound)
	}
	if e.cfg.ReloadFault != nil {
		return e.cfg.ReloadFault(model)
	}
	return nil
}

// PromptTokens implements npu.Engine: the simulated tokenizer's count of
// the prompt Generate reads.
func (e *Engine) PromptTokens(req *npu.Request) (int, bool) {
	return CountTokens(PromptText(req)), true
}

// CountPrompt implements npu.Engine: the simulated tokenizer's count of
// the prompt Generate reads, which is the prompt_tokens Generate reports.
func (e *Engine) CountPrompt(_ context.Context, req *npu.Request) (int, error) {
	return CountTokens(PromptText(req)), nil
}

// Generate implements npu.Engine.
func (e *Engine) Generate(ctx context.Context, req *npu.Request, sink npu.Sink) (npu.Result, error) {
	prompt := PromptText(req)
	promptTokens := CountTokens(prompt)
	reused := e.cache.reuse(req, promptTokens)
	limit, clamped, err := npu.CompletionLimit(req.MaxTokens, promptTokens, npu.RequestContext(req, e.cfg.ContextLength))
	if err != nil {
		return npu.Result{}, err
	}
	tokens := Tokens(seedOf(req), prompt)
	if tool, ok := plannedCall(req, rngFor(seedOf(req), prompt)); ok {
		tokens = ToolCallTokens(seedOf(req), prompt, tool, e.family)
	} else if req.Format != nil {
		doc, err := Document(req)
		if err != nil {
			return npu.Result{}, err
		}
		tokens = documentTokens(seedOf(req), doc)
	} else if seen := describeImages(req); seen != nil {
		tokens = append(seen, tokens...)
	}
	if req.Think != nil && *req.Think && e.reasons() {
		tokens = append(Reasoning(seedOf(req), prompt), tokens...)
	}
	res := npu.Result{FinishReason: npu.FinishStop, PromptTokens: promptTokens, CachedPromptTokens: reused}
	if clamped {
		res.MaxTokensClamped = limit
	}
	if len(tokens) > limit {
		tokens, res.FinishReason = tokens[:limit], npu.FinishLength
	}
	var fault Fault
	if e.cfg.Faults != nil {
		fault = e.cfg.Faults(req)
	}

	type outcome struct {
		res npu.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() { // a "native" thread, as OpenVINO's streamer worker
		r, err := e.emit(ctx, tokens, fault, sink, res, time.Duration(promptTokens-reused)*e.cfg.PromptTokenCost)
		done <- outcome{r, err}
	}()
	o := <-done
	e.cache.hold(req, o.err == nil)
	return o.res, o.err
}

// convCache models a stateful pipeline's KV cache per model, as GenAI's
// does: the conversation it ran last, whose tokens a request that
// continues it (more messages, every earlier one equal) does not prefill
// again.
type convCache struct {
	mu   sync.Mutex
	held map[string][]npu.Message // bounded by the models served
}

// reuse is how many of req's prompt tokens the cache holds.
func (c *convCache) reuse(req *npu.Request, promptTokens int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	held, ok := c.held[req.Model]
	if !ok || len(held) == 0 || len(req.Messages) <= len(held) || !slices.EqualFunc(held, req.Messages[:len(held)], npu.Message.Equal) {
		return 0
	}
	cached := req.Messages[:len(held)]
	if req.Messages[len(held)].Role == "assistant" {
		cached = req.Messages[:len(held)+1] // the answer generated last time is cached too
	}
	return min(CountTokens(PromptText(&npu.Request{Messages: cached})), promptTokens-1)
}

// hold records what the cache holds after req: its conversation, or
// nothing known after a failure.
func (c *convCache) hold(req *npu.Request, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[string][]npu.Message{}
	}
	if !ok || len(req.Messages) == 0 {
		delete(c.held, req.Model)
		return
	}
	c.held[req.Model] = slices.Clone(req.Messages)
}

func (e *Engine) emit(ctx context.Context, tokens []string, fault Fault, sink npu.Sink, res npu.Result, prefillCost time.Duration) (npu.Result, error) {
	start := time.Now()
	time.Sleep(e.cfg.TTFT + prefillCost) // prefill cannot be interrupted, as on real engines
	var first time.Time
	finish := func() npu.Result {
		if !first.IsZero() {
			res.Timings.Prefill = first.Sub(start)
			res.Timings.Decode = time.Since(first)
		} else {
			res.Timings.Prefill = time.Since(start)
		}
		return res
	}
	for i, tok := range tokens {
		n := i + 1
		switch {
		case i == 0:
		case e.cfg.ITL > 0:
			time.Sleep(e.cfg.ITL)
		default:
			// Zero latency still lets other goroutines run between tokens,
			// as a real engine's thread would (an await, not a spin).
			runtime.Gosched()
		}
		if n == fault.StallAtToken {
			stall(ctx, fault.StallFor)
		}
		if n == fault.ErrorAtToken {
			return finish(), &npu.EngineError{Engine: "sim", Cause: fmt.Errorf("simulated fault at token %d", n)}
		}
		if first.IsZero() {
			first = time.Now()
		}
		res.CompletionTokens = n
		status := deliver(sink, tok, fault.SplitRunes)
		if status == npu.Running {
			continue
		}
		// OpenVINO flushes its detokenizer after Stop/Cancel and ignores the
		// answer; so do we, with the text of the token it was holding.
		if i+1 < len(tokens) {
			sink(tokens[i+1])
			res.CompletionTokens++
		}
		if status == npu.Cancel {
			res.FinishReason = npu.FinishCancelled
		} else {
			res.FinishReason = npu.FinishStop
		}
		return finish(), nil
	}
	return finish(), nil
}

// deliver sends one token, split inside its first multi-byte character when
// split is set; it returns the first non-Running answer.
func deliver(sink npu.Sink, tok string, split bool) npu.Status {
	if split {
		for i, r := range tok {
			if size := utf8.RuneLen(r); size > 1 {
				cut := i + size/2
				if st := sink(tok[:cut]); st != npu.Running {
					return st
				}
				return sink(tok[cut:])
			}
		}
	}
	return sink(tok)
}

func stall(ctx context.Context, d time.Duration) {
	if d <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func seedOf(req *npu.Request) int64 {
	if req.Sampling.Seed != nil {
		return *req.Sampling.Seed
	}
	return 0
}

// PromptText renders a request as the text the simulated model "reads": the
// prompt, or each chat message as "role: content" on its own line.
func PromptText(req *npu.Request) string {
	if len(req.Messages) == 0 {
		return req.Prompt
	}
	var b strings.Builder
	if len(req.Tools) > 0 {
		b.WriteString("tools:")
		for _, t := range req.Tools {
			b.WriteString(" " + t.Name)
		}
		b.WriteByte('\n')
	}
	for _, m := range req.Messages {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " [call %s %s]", c.Name, c.Arguments)
		}
		for _, img := range m.Images {
			fmt.Fprintf(&b, " [image %dx%d]", img.Width, img.Height)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// CountTokens is the simulated tokenizer: one token per four characters,
// rounded up, at least one.
func CountTokens(text string) int {
	return max(1, (utf8.RuneCountInString(text)+3)/4)
}

// vocabulary mixes ASCII with two-, three- and four-byte characters so that
// every UTF-8 path of the bridge is exercised by ordinary output.
var vocabulary = [...]string{
	"the", "neural", "processing", "unit", "streams", "tokens", "quickly", "and",
	"quietly", "while", "a", "model", "thinks", "about", "café", "naïve",
	"Zürich", "日本語", "データ", "🙂", "🚀", "edge", "device", "latency",
	"is", "low", "every", "answer", "arrives", "in", "order", "niño",
}

// Tokens returns the simulated model's complete answer to prompt with seed,
// one string per token: between 32 and 127 tokens of words and punctuation.
func Tokens(seed int64, prompt string) []string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, prompt)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
	n := 32 + rng.IntN(96)
	out := make([]string, n)
	for i := range out {
		w := vocabulary[rng.IntN(len(vocabulary))]
		switch {
		case i == 0 && w[0] >= 'a' && w[0] <= 'z':
			w = strings.ToUpper(w[:1]) + w[1:]
		case i == 0:
		case rng.IntN(8) == 0:
			w = "."
		default:
			w = " " + w
		}
		out[i] = w
	}
	return out
}

// Reasoning is the simulated model's reasoning for a prompt, with the
// tags a reasoning model puts around it: "<think>", the thoughts,
// "</think>" and a blank line. It counts against max_tokens, as a real
// model's reasoning does.
func Reasoning(seed int64, prompt string) []string {
	thoughts := Tokens(seed+1, "reasoning about: "+prompt)
	thoughts = thoughts[:min(len(thoughts), 12)]
	return append(append([]string{chatfmt.ThinkOpen}, thoughts...), chatfmt.ThinkClose, "\n\n")
}

// Text is the simulated model's complete answer as one string.
func Text(seed int64, prompt string) string { return strings.Join(Tokens(seed, prompt), "") }

// Prefix is the answer cut to its first n tokens (n <= 0: the whole of it),
// what a request with max_tokens n gets.
func Prefix(seed int64, prompt string, n int) string {
	tokens := Tokens(seed, prompt)
	if n > 0 && n < len(tokens) {
		tokens = tokens[:n]
	}
	return strings.Join(tokens, "")
}
