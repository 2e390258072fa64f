//go:build openvino && cgo && ovtest

package openvino

import (
	"context"
	"testing"

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

// The test library models GenAI's stateful pipeline: a history that
// continues the one whose KV cache the NPU holds prefills only its new
// messages; any other history prefills everything.
func TestHistoryContinuationPrefillsOnlyTheNewTurn(t *testing.T) {
	_, r := newTestEngine(t, "NPU", Config{Device: "NPU"})
	first := []npu.Message{{Role: "system", Content: "be brief and kind to every user of this box"}, {Role: "user", Content: "tell me about the npu"}}
	answer, _, err := run(t, r, &npu.Request{Model: "tiny", Messages: first})
	require.NoError(t, err)
	whole := testLastPrefilled()

	next := append(append([]npu.Message{}, first...), npu.Message{Role: "assistant", Content: answer}, npu.Message{Role: "user", Content: "more"})
	_, res, err := run(t, r, &npu.Request{Model: "tiny", Messages: next})
	require.NoError(t, err)
	assert.Less(t, testLastPrefilled(), whole, "only the new turns were prefilled")
	assert.Equal(t, testLastPrefilled(), res.PromptTokens, "GenAI counts the prefilled part")

	other := []npu.Message{{Role: "user", Content: "a different conversation entirely, from its start"}}
	_, _, err = run(t, r, &npu.Request{Model: "tiny", Messages: other})
	require.NoError(t, err)
	assert.Positive(t, testLastPrefilled())
	_, _, err = run(t, r, &npu.Request{Model: "tiny", Messages: first})
	require.NoError(t, err)
	assert.Equal(t, whole, testLastPrefilled(), "a history that does not continue the cached one is prefilled whole")
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
