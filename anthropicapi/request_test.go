package anthropicapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// How a conversation reaches the engine: system blocks joined, tool
// results as tool messages before the turn's text, an error result marked
// for the model, earlier thinking left out, tool choices mapped.
func TestToEngineRequest(t *testing.T) {
	body := `{"model":"m","max_tokens":100,
		"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}},{"type":"text","text":"be kind"}],
		"tools":[{"name":"ls","input_schema":{"type":"object"}},{"type":"custom","name":"cat","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true},
		"stop_sequences":["END"],"temperature":0.5,"top_k":5,"metadata":{"user_id":"u"},
		"messages":[
			{"role":"user","content":"list files"},
			{"role":"system","content":[{"type":"text","text":"reminder"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"sure"},
				{"type":"tool_use","id":"t1","name":"ls","input":{"dir":"."}},{"type":"tool_use","id":"t2","name":"cat","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]},
				{"type":"tool_result","tool_use_id":"t2","content":"no such file","is_error":true},{"type":"text","text":"thanks"}]}
		]}`
	var req request
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	p, apiErr := req.toEngineRequest(0)
	require.Nil(t, apiErr)
	r := p.req
	assert.Equal(t, []npu.Message{
		{Role: "system", Content: "be brief\nbe kind\n\nreminder"},
		{Role: "user", Content: "list files"},
		{Role: "assistant", Content: "sure", ToolCalls: []npu.ToolCall{{ID: "t1", Name: "ls", Arguments: `{"dir":"."}`}, {ID: "t2", Name: "cat", Arguments: `{}`}}},
		{Role: "tool", Content: "a.txt", ToolCallID: "t1", ToolName: "ls"},
		{Role: "tool", Content: "Error: no such file", ToolCallID: "t2", ToolName: "cat"},
		{Role: "user", Content: "thanks"},
	}, r.Messages)
	assert.Equal(t, npu.ToolChoice{Mode: npu.ToolChoiceRequired}, r.ToolChoice)
	assert.True(t, r.SingleToolCall)
	assert.Len(t, r.Tools, 2)
	assert.Equal(t, []string{"END"}, r.Stop)
	assert.Equal(t, 100, r.MaxTokens)
	assert.Equal(t, 0.5, *r.Sampling.Temperature)
	assert.Equal(t, 5, *r.Sampling.TopK)
	assert.Nil(t, r.Think)
}

func TestToolInput(t *testing.T) {
	assert.JSONEq(t, `{}`, string(toolInput("")))
	assert.JSONEq(t, `{"a":1}`, string(toolInput(`{"a":1}`)))
	assert.JSONEq(t, `{"npud_unparsed_arguments":"[1,2"}`, string(toolInput(`[1,2`)), "kept, never dropped")
	assert.JSONEq(t, `{"npud_unparsed_arguments":"null"}`, string(toolInput(`null`)))
}

// A system message among the turns joins the system prompt, also when
// there is no top-level one: images stay with their messages.
func TestSystemMessageAmongTurns(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"messages":[
		{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"text","text":"look"}]},
		{"role":"system","content":"be brief"}]}`
	var req request
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	p, apiErr := req.toEngineRequest(0)
	require.Nil(t, apiErr)
	require.Len(t, p.req.Messages, 2)
	assert.Equal(t, npu.Message{Role: "system", Content: "be brief"}, p.req.Messages[0])
	require.Len(t, p.images, 1)
	assert.Equal(t, 1, p.images[0].message, "the image's message moved down with the system prompt in front")
}
