//go:build cgo

package openvino

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

func ptr[T any](v T) *T { return &v }

// Issue 11, defect 4: settings GenAI's validate() refuses are a request
// error found before generating, never an anonymous engine failure, even
// when they reach the engine without the API layers' check.
func TestGenAIValidationIsARequestError(t *testing.T) {
	cases := []struct {
		name     string
		sampling npu.Sampling
	}{
		{"top_p 0 with sampling", npu.Sampling{Temperature: ptr(0.7), TopP: ptr(0.0)}},
		{"min_p 1 with sampling", npu.Sampling{Temperature: ptr(0.7), MinP: ptr(1.0)}},
		{"repetition penalty 0", npu.Sampling{RepetitionPenalty: ptr(0.0)}},
		{"presence penalty 3", npu.Sampling{PresencePenalty: ptr(3.0)}},
	}
	for _, device := range []string{"CPU", "NPU"} {
		t.Run(device, func(t *testing.T) {
			e, _ := newTestEngine(t, device, Config{Device: device})
			require.NoError(t, e.Load(context.Background(), "tiny"))
			for _, tc := range cases {
				calls := 0
				_, err := e.Generate(context.Background(), &npu.Request{Model: "tiny", Prompt: "hello", Sampling: tc.sampling},
					func(string) npu.Status { calls++; return npu.Running })
				require.ErrorIs(t, err, npu.ErrInvalidRequest, tc.name)
				assert.Zero(t, calls, "nothing was generated: %s", tc.name)
			}
		})
	}
}

// Issue 11, defect 3: on the NPU a plain prompt after a chat must still be
// served (GenAI's stateful pipeline refuses to switch input types until
// finish_chat), and a chat after a prompt too.
func TestPromptAfterChatOnTheNPU(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU"})
	order := []*npu.Request{
		{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: "hi"}}},
		{Model: "tiny", Prompt: "once upon a time"},
		{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: "again"}}},
		{Model: "tiny", Prompt: "and then"},
	}
	for i, req := range order {
		text, _, err := run(t, r, req)
		require.NoError(t, err, "request %d", i)
		assert.NotEmpty(t, text, "request %d", i)
	}
}

// Issue 24, defect 1: on the NPU GenAI prefills and counts the whole
// templated history on every turn (pipeline_stateful.cpp:
// m_use_full_chat_history), so usage is GenAI's count, nothing of it comes
// from a cache, and a continued conversation that ends at EOS is a stop,
// not a length cut from a count that added the previous turn again.
func TestNPUCountsTheWholeHistoryEveryTurn(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU", MaxPromptLen: 100, MinResponseLen: 40})
	words := strings.Repeat("word ", 36)
	first := []npu.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: words}}
	answer, res1, err := run(t, r, &npu.Request{Model: "tiny", Messages: first, Sampling: npu.Sampling{Seed: seed(3)}})
	require.NoError(t, err)
	assert.Equal(t, testLastPrefilled(), res1.PromptTokens)
	assert.Zero(t, res1.CachedPromptTokens)

	next := append(append([]npu.Message{}, first...), npu.Message{Role: "assistant", Content: answer}, npu.Message{Role: "user", Content: "more"})
	_, res2, err := run(t, r, &npu.Request{Model: "tiny", Messages: next, Sampling: npu.Sampling{Seed: seed(3)}})
	require.NoError(t, err)
	assert.Equal(t, testLastPrefilled(), res2.PromptTokens, "GenAI's count is the whole history")
	assert.Zero(t, res2.CachedPromptTokens, "the NPU keeps no KV cache between turns")
	assert.Greater(t, res2.PromptTokens, res1.PromptTokens)
	require.Less(t, res2.PromptTokens+res2.CompletionTokens, 100+40-1, "the KV cache did not fill")
	assert.Equal(t, npu.FinishStop, res2.FinishReason, "the answer ended at EOS")
}

// Issue 24, defect 8: on CPU/GPU, when paged attention cannot start, GenAI
// falls back to its stateful pipeline (src/cpp/src/llm/pipeline.cpp), which
// keeps the KV cache and counts only the new part of a continued history
// (is_history_continuation). npud compiles with the attention backend
// named, knows which pipeline runs, and reports the whole prompt.
func TestStatefulCPUFallbackCountsTheWholePrompt(t *testing.T) {
	dir := modelsDir(t, "tiny")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny", "no_paged_attention"), nil, 0o644))
	_, r := newTestEngine(t, "CPU", Config{Device: "CPU", ModelsDir: dir})
	first := []npu.Message{{Role: "system", Content: "be brief and kind to every user of this box"}, {Role: "user", Content: "tell me about the npu"}}
	answer, res1, err := run(t, r, &npu.Request{Model: "tiny", Messages: first})
	require.NoError(t, err)
	assert.Equal(t, testLastPrefilled(), res1.PromptTokens)

	next := append(append([]npu.Message{}, first...), npu.Message{Role: "assistant", Content: answer}, npu.Message{Role: "user", Content: "more"})
	_, res2, err := run(t, r, &npu.Request{Model: "tiny", Messages: next})
	require.NoError(t, err)
	prefilled := testLastPrefilled()
	assert.Less(t, prefilled, res1.PromptTokens, "the stateful pipeline prefilled only the new turn")
	assert.GreaterOrEqual(t, res2.PromptTokens, res1.PromptTokens+res1.CompletionTokens, "usage counts the cached part too")
	assert.Equal(t, res2.PromptTokens-prefilled, res2.CachedPromptTokens, "what was not prefilled came from the cache")

	// A history that does not continue the cached one is counted whole.
	_, res3, err := run(t, r, &npu.Request{Model: "tiny", Messages: first})
	require.NoError(t, err)
	assert.Equal(t, res1.PromptTokens, res3.PromptTokens)
	assert.Zero(t, res3.CachedPromptTokens)
}

// Issue 11, defect 6: when the NPU's KV cache (MAX_PROMPT_LEN +
// MIN_RESPONSE_LEN - 1 tokens) fills, GenAI stops with OK; the client is
// told the answer was cut (length), not that it ended.
func TestFullNPUCacheIsFinishLength(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU", MaxPromptLen: 16, MinResponseLen: 4})
	_, res, err := run(t, r, &npu.Request{Model: "tiny", Messages: []npu.Message{{Role: "user", Content: "one two three"}}, MaxTokens: 1000})
	require.NoError(t, err)
	assert.Equal(t, npu.FinishLength, res.FinishReason)
}

// The test library streams like GenAI's TextStreamer: the last tokens are
// held back (so the first callback comes late, and a short answer arrives
// whole in the final flush), a newline flushes, an incomplete code point is
// never sent, empty text never is, and the final flush ends every
// generation: on CPU/GPU on the caller's thread, after GenAI's streamer
// thread is joined.
func TestStreamerBehavesLikeGenAIs(t *testing.T) {
	for _, device := range []string{"CPU", "NPU"} {
		t.Run(device, func(t *testing.T) {
			e, _ := newTestEngine(t, device, Config{Device: device})
			require.NoError(t, e.Load(context.Background(), "tiny"))
			collect := func(req *npu.Request) ([]string, npu.Result) {
				var chunks []string
				res, err := e.Generate(context.Background(), req, func(text string) npu.Status {
					chunks = append(chunks, text)
					return npu.Running
				})
				require.NoError(t, err)
				return chunks, res
			}

			for _, n := range []int{1, 2} {
				chunks, res := collect(&npu.Request{Model: "tiny", Prompt: "short", MaxTokens: n, Sampling: npu.Sampling{Seed: seed(1)}})
				assert.Len(t, chunks, 1, "%d tokens: nothing until the final flush", n)
				assert.Equal(t, n, res.CompletionTokens)
				assert.False(t, testLastCallbacksForeign(), "the final flush runs on the caller's thread")
			}

			// A seed whose answer holds the split emoji and a line end.
			var chunks []string
			var res npu.Result
			for s := int64(1); s < 500; s++ {
				chunks, res = collect(&npu.Request{Model: "tiny", Prompt: "long", Sampling: npu.Sampling{Seed: seed(s)}})
				if whole := strings.Join(chunks, ""); strings.Contains(whole, "🙂") && strings.Contains(whole, "\n") {
					break
				}
			}
			whole := strings.Join(chunks, "")
			require.Contains(t, whole, "🙂")
			require.Contains(t, whole, "\n")
			assert.Less(t, len(chunks), res.CompletionTokens, "held-back tokens arrive together")
			for i, c := range chunks {
				assert.NotEmpty(t, c, "chunk %d", i)
				assert.True(t, utf8.ValidString(c), "chunk %d %q: an incomplete code point was sent", i, c)
				if j := strings.IndexByte(c, '\n'); j >= 0 {
					assert.Equal(t, len(c)-1, j, "chunk %d %q: a newline flushes, so it ends the chunk", i, c)
				}
			}
			assert.Equal(t, device != "NPU", testLastCallbacksForeign(), "CPU/GPU stream from a thread of GenAI's")
		})
	}
}
