package serve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

var weatherTool = npu.Tool{Name: "get_weather", Parameters: json.RawMessage(
	`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)}

// Through the bridge: a Qwen3 answer that reasons, then calls, split in
// engine chunks; the reasoning stays apart, no piece of the call is
// content, and the generation finishes with tool_calls.
func TestStreamParsesToolCallsAfterReasoning(t *testing.T) {
	e := &fakeEngine{details: npu.ModelDetails{ToolFormat: chatfmt.Hermes{}.Name(), Thinking: true},
		script: texts("<think>\nI should", " look it up.\n</think>\n\n<tool", "_call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"city\"", ": \"Oslo\"}}\n</tool_call>")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}, Tools: []npu.Tool{weatherTool}})
	a, err := npu.CollectAnswer(context.Background(), s.Next)
	require.NoError(t, err)
	assert.Equal(t, "I should look it up.", a.Reasoning)
	assert.Empty(t, a.Text)
	require.Len(t, a.ToolCalls, 1)
	assert.Equal(t, "get_weather", a.ToolCalls[0].Name)
	assert.Equal(t, `{"city": "Oslo"}`, a.ToolCalls[0].Arguments)
	assert.Equal(t, npu.FinishToolCalls, a.Result.FinishReason)
	assert.Empty(t, s.Stats().ToolCallProblems)
}

// parallel_tool_calls false: the engine is stopped after the first call.
func TestStreamStopsAfterTheOneCallAllowed(t *testing.T) {
	call := "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>"
	e := &fakeEngine{details: npu.ModelDetails{ToolFormat: chatfmt.Hermes{}.Name()}, script: texts(call, call, "more", "text")}
	r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
	s := start(t, r, &npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}, Tools: []npu.Tool{weatherTool}, SingleToolCall: true})
	a, err := npu.CollectAnswer(context.Background(), s.Next)
	require.NoError(t, err)
	require.Len(t, a.ToolCalls, 1)
	assert.Empty(t, a.Text)
	g := e.waitReturned(t, 0)
	assert.Equal(t, []npu.Status{npu.Stop}, g.statuses, "the engine was stopped at the first call")
}

// A model whose template renders no tools is refused them, naming it; one
// without a vision encoder is refused images.
func TestRouterRefusesWhatTheModelCannotDo(t *testing.T) {
	r := newTestRouter(t, &fakeEngine{}, PoolConfig{MaxQueue: 4})
	_, err := r.Start(&npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}, Tools: []npu.Tool{weatherTool}})
	var ie *npu.InvalidRequestError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "tools", ie.Param)
	assert.Contains(t, ie.Message, `model "m" does not support tools`)
	_, err = r.Start(&npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x", Images: []npu.Image{{Width: 1, Height: 1, RGB: []byte{0, 0, 0}}}}}})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Message, `model "m" does not support images`)
	// tool_choice none: the tools are not the model's business at all.
	s, err := r.Start(&npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}, Tools: []npu.Tool{weatherTool}, ToolChoice: npu.ToolChoice{Mode: npu.ToolChoiceNone}})
	require.NoError(t, err)
	s.Close()
}

// Reasoning is split as the model's family writes it: a family that
// writes none apart (Llama 3) keeps <think> in its answer; a model whose
// family is unknown has it split, as every model had before families.
func TestStreamSplitsReasoningPerFamily(t *testing.T) {
	answer := texts("<think>hm", "</think>Hello")
	for _, tc := range []struct {
		family, text, reasoning string
	}{
		{chatfmt.Hermes{}.Name(), "Hello", "hm"},
		{"", "Hello", "hm"},
		{chatfmt.Llama3{}.Name(), "<think>hm</think>Hello", ""},
	} {
		e := &fakeEngine{details: npu.ModelDetails{ToolFormat: tc.family}, script: answer}
		r := newTestRouter(t, e, PoolConfig{MaxQueue: 4})
		s := start(t, r, &npu.Request{Model: "m", Messages: []npu.Message{{Role: "user", Content: "x"}}})
		a, err := npu.CollectAnswer(context.Background(), s.Next)
		require.NoError(t, err)
		assert.Equal(t, tc.text, a.Text, "family %q", tc.family)
		assert.Equal(t, tc.reasoning, a.Reasoning, "family %q", tc.family)
	}
}
