//go:build cgo

package openvino

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// Issue 11, defect 5: GenAI re-seeds with rng_seed 0 on every generate, so
// without a seed of the request's own every sampled answer was the same.
func TestUnseededSampledRequestsDiffer(t *testing.T) {
	_, r := newTestEngine(t, "CPU", Config{Device: "CPU"})
	temp := 0.8
	seen := map[string]bool{}
	for range 4 {
		text, _, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "tell me a story", Sampling: npu.Sampling{Temperature: &temp}})
		require.NoError(t, err)
		seen[text] = true
	}
	assert.Greater(t, len(seen), 1, "four sampled requests without a seed gave one text")

	a, _, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "tell me a story", Sampling: npu.Sampling{Temperature: &temp, Seed: seed(7)}})
	require.NoError(t, err)
	b, _, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "tell me a story", Sampling: npu.Sampling{Temperature: &temp, Seed: seed(7)}})
	require.NoError(t, err)
	assert.Equal(t, a, b, "a seed makes a request reproducible")
}

// Issue 11, defect 9: a device with an index is still an NPU.
func TestIndexedNPUGetsTheNPUProperties(t *testing.T) {
	e := &Engine{cfg: Config{MaxPromptLen: 2048, MinResponseLen: 256, GenerateHint: "BEST_PERF"}}
	dir := t.TempDir()
	for _, device := range []string{"NPU", "NPU.0", "NPU.1"} {
		props, err := e.properties(dir, device)
		require.NoError(t, err)
		assert.Contains(t, props, property{"MAX_PROMPT_LEN", "2048"}, device)
		assert.Contains(t, props, property{"MIN_RESPONSE_LEN", "256"}, device)
		assert.Contains(t, props, property{"GENERATE_HINT", "BEST_PERF"}, device)
	}
	props, err := e.properties(dir, "GPU.0")
	require.NoError(t, err)
	assert.Empty(t, props, "NPU properties stay off other devices")
}

// Issue 11, defect 9: a panic in the stream callback cancels the native
// generation and ends it as an engine error, not as a clean stop.
func TestCallbackPanicIsAnEngineError(t *testing.T) {
	for _, device := range []string{"CPU", "NPU"} {
		t.Run(device, func(t *testing.T) {
			e, _ := newTestEngine(t, device, Config{Device: device})
			t.Setenv("OVTEST_TOKEN_DELAY_US", "2000") // CPU/GPU see the streamer's answer one token later
			require.NoError(t, e.Load(context.Background(), "tiny"))
			calls := 0
			_, err := e.Generate(context.Background(), &npu.Request{Model: "tiny", Prompt: "panic please"}, func(string) npu.Status {
				calls++
				if calls == 2 {
					panic("sink broke")
				}
				return npu.Running
			})
			var ee *npu.EngineError
			require.ErrorAs(t, err, &ee)
			assert.Contains(t, err.Error(), "sink broke")
			assert.Less(t, testLastGenerated(), 10, "the panic stopped the native loop")
		})
	}
}

// Issue 11, defects 6 and 7: without max_tokens GenAI's max_new_tokens is
// SIZE_MAX (or the model's default); the NPU's KV cache holds MAX_PROMPT_LEN
// + MIN_RESPONSE_LEN − 1 tokens and then GenAI stops quietly. The request is
// capped at that context, and a full cache is finish_reason length.
func TestNoMaxTokensStopsAtTheNPUContextWithLength(t *testing.T) {
	e, r := newTestEngine(t, "NPU.0", Config{Device: "NPU.0", MaxPromptLen: 8, MinResponseLen: 4})
	assert.Equal(t, 11, e.Models()[0].ContextLength, "the NPU's context is GenAI's get_npu_kv_cache_capacity")
	_, res, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "hello there"})
	require.NoError(t, err)
	assert.LessOrEqual(t, res.CompletionTokens, 11, "capped at the context")
	assert.Equal(t, npu.FinishLength, res.FinishReason, "the context ran out: length, not stop")
}

// Issue 11, defect 8: tokens GenAI makes after the sink answered STOP are
// counted in its metrics but never reach the client; usage counts what the
// client got. The sink is slow to answer, so the CPU's generation loop
// runs ahead of its streamer thread, as GenAI's does.
func TestUsageCountsWhatTheClientGot(t *testing.T) {
	e, _ := newTestEngine(t, "CPU", Config{Device: "CPU"})
	require.NoError(t, e.Load(context.Background(), "tiny"))
	var got strings.Builder
	res, err := e.Generate(context.Background(), &npu.Request{Model: "tiny", Prompt: "stop test", Sampling: npu.Sampling{Seed: seed(3)}},
		func(text string) npu.Status {
			if got.Len() > 0 {
				return npu.Stop // the final flush: the client is no longer listening
			}
			got.WriteString(text)
			time.Sleep(5 * time.Millisecond)
			return npu.Stop
		})
	require.NoError(t, err)
	require.NotEmpty(t, got.String())
	require.Greater(t, testLastGenerated(), testLastWritten(), "the library generated past the STOP, as GenAI does")
	assert.Less(t, res.CompletionTokens, testLastGenerated(), "tokens never streamed are not counted")
	assert.Less(t, res.CompletionTokens, testLastWritten(),
		"the streamer held the last tokens back when the client stopped listening")
	assert.Positive(t, res.CompletionTokens)
}

func TestDeliveredTokens(t *testing.T) {
	for _, tc := range []struct{ generated, sent, total, want int }{
		{10, 50, 50, 10}, // everything went out: GenAI's count
		{10, 60, 50, 10}, // never more than generated
		{10, 25, 50, 5},  // half the text, half the tokens
		{10, 1, 50, 1},   // a sliver is still a token
		{10, 0, 50, 0},   // nothing went out
		{10, 20, -1, 10}, // the text length is unknown
		{0, 0, 0, 0},
	} {
		assert.Equal(t, tc.want, deliveredTokens(tc.generated, tc.sent, tc.total), "%+v", tc)
	}
}

// Issue 11, defect 8: GenAI's getters answer -1 for a metric without samples.
func TestTimingsAreNeverNegative(t *testing.T) {
	for _, tc := range []struct {
		ttft, gen float64
		elapsed   time.Duration
		want      npu.Timings
	}{
		{-1, -1, 5 * time.Millisecond, npu.Timings{Decode: 5 * time.Millisecond}},
		{-1, 20, time.Second, npu.Timings{Decode: 20 * time.Millisecond}},
		{4, 10, time.Second, npu.Timings{Prefill: 4 * time.Millisecond, Decode: 6 * time.Millisecond}},
		{30, 10, time.Second, npu.Timings{Prefill: 10 * time.Millisecond}},
	} {
		assert.Equal(t, tc.want, timings(tc.ttft, tc.gen, tc.elapsed), "ttft %g, generate %g", tc.ttft, tc.gen)
	}
}

// Issue 11, defect 9: top_k 0 switches top-k off; GenAI spells that as the
// largest size_t (its default), as 0 would not be "off".
func TestTopKZeroIsGenAIsOff(t *testing.T) {
	assert.Equal(t, uint64(math.MaxUint64), uint64(topK(0)))
	assert.Equal(t, uint64(40), uint64(topK(40)))
}

// Issue 11, defects 3 and 4: a model without a chat template refuses chat
// with a 400 before any native call (GenAI would fail with no reason and
// latch the pipeline into chat mode), and its prompts stay plain; a model
// with one takes prompts and chats in any order on the NPU's stateful
// pipeline, as prompts go through the same chat-history path.
func TestChatTemplateDecidesThePath(t *testing.T) {
	dir := modelsDir(t, "tiny", "plain")
	require.NoError(t, os.Remove(filepath.Join(dir, "plain", "tokenizer_config.json")))
	_, r := newTestEngine(t, "NPU", Config{ModelsDir: dir, Device: "NPU"})
	chat := []npu.Message{{Role: "user", Content: "hi"}}

	_, _, err := run(t, r, &npu.Request{Model: "plain", Messages: chat})
	var invalid *npu.InvalidRequestError
	require.ErrorAs(t, err, &invalid, "a request error, not an engine fault or a context error")
	assert.Equal(t, "messages", invalid.Param)
	assert.Contains(t, err.Error(), "chat template")
	assert.NotErrorIs(t, err, npu.ErrContextLength)
	_, _, err = run(t, r, &npu.Request{Model: "plain", Prompt: "still works"})
	require.NoError(t, err)

	for _, req := range []*npu.Request{{Prompt: "first"}, {Messages: chat}, {Prompt: "after a chat"}, {Messages: chat}} {
		req.Model = "tiny"
		_, _, err := run(t, r, req)
		require.NoError(t, err)
	}
}

// Issue 11, defect 6: on the Ollama routes a history over the NPU's
// MAX_PROMPT_LEN loses its oldest turns (keeping system messages and the
// last message), as Ollama does with num_ctx; OpenAI's stays an error.
func TestHistoryOverTheNPULimitDropsOldestTurns(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU", MaxPromptLen: 8})
	msgs := []npu.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "a b c d"},
		{Role: "assistant", Content: "e f g h"},
		{Role: "user", Content: "i j"},
	}
	_, _, err := run(t, r, &npu.Request{Model: "tiny", Messages: msgs})
	require.ErrorIs(t, err, npu.ErrContextLength, "without DropOldestTurns: the OpenAI answer")
	_, res, err := run(t, r, &npu.Request{Model: "tiny", Messages: msgs, DropOldestTurns: true})
	require.NoError(t, err)
	assert.LessOrEqual(t, res.PromptTokens, 8)

	_, _, err = run(t, r, &npu.Request{Model: "tiny", DropOldestTurns: true, Messages: []npu.Message{
		{Role: "system", Content: "sys"}, {Role: "user", Content: "one two three four five six seven eight nine"},
	}})
	require.ErrorIs(t, err, npu.ErrContextLength, "the last message alone does not fit: nothing more to drop")
}

func TestDropOldestTurns(t *testing.T) {
	sys, u1, a1, u2 := npu.Message{Role: "system"}, npu.Message{Role: "user", Content: "1"}, npu.Message{Role: "assistant"}, npu.Message{Role: "user", Content: "2"}
	got, ok := dropOldestTurns([]npu.Message{sys, u1, a1, u2}, 1)
	assert.True(t, ok)
	assert.Equal(t, []npu.Message{sys, a1, u2}, got)
	got, ok = dropOldestTurns([]npu.Message{sys, u1, a1, u2}, 4)
	assert.True(t, ok)
	assert.Equal(t, []npu.Message{sys, u2}, got, "never the system message nor the last one")
	_, ok = dropOldestTurns([]npu.Message{sys, u2}, 1)
	assert.False(t, ok, "the system message and the last message stay")
}

// Issue 11, defect 7: on CPU/GPU, no max_tokens is capped at the model's
// own context (config.json), not left at the model's or GenAI's default.
func TestNoMaxTokensIsCappedAtTheModelsContext(t *testing.T) {
	dir := modelsDir(t, "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny", "config.json"), []byte(`{"max_position_embeddings": 5}`), 0o644))
	_, r := newTestEngine(t, "CPU", Config{ModelsDir: dir, Device: "CPU"})
	_, res, err := run(t, r, &npu.Request{Model: "tiny", Prompt: "hello"})
	require.NoError(t, err)
	assert.Equal(t, 5, res.CompletionTokens)
	assert.Equal(t, npu.FinishLength, res.FinishReason)
}

// Issue 11, defect 4: on the NPU a failure before any output was always
// called a context error. A prompt that cannot be over MAX_PROMPT_LEN
// failing is a device or driver fault: an engine error (5xx), not a 400.
func TestNPUFaultOnAShortPromptIsAnEngineError(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU"})
	for _, req := range []*npu.Request{
		{Model: "tiny", Prompt: "OVTEST_FAIL"},
		{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: "OVTEST_FAIL"}}, DropOldestTurns: true},
	} {
		_, _, err := run(t, r, req)
		var ee *npu.EngineError
		require.ErrorAs(t, err, &ee)
		assert.NotErrorIs(t, err, npu.ErrContextLength)
	}
}
