//go:build cgo

package openvino

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// The conversation a renderer gets is the request's: tools in OpenAI's
// function shape with the schema's keys as sent, calls' arguments as JSON
// (text that is not JSON becomes a JSON string, as a template would get
// it), tool results with their call and tool.
func TestConversationOf(t *testing.T) {
	on := true
	req := &npu.Request{Think: &on, Tools: []npu.Tool{
		{Name: "get_weather", Description: "Weather \"now\"", Parameters: json.RawMessage(`{"type":"object","properties":{"z":{},"a":{}}}`)},
		{Name: "ping"},
	}}
	msgs := []npu.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []npu.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"z":1,"a":2}`}, {ID: "c2", Name: "ping", Arguments: "not json"}}},
		{Role: "tool", ToolCallID: "c1", ToolName: "get_weather", Content: "12"},
	}
	conv, err := conversationOf(req, msgs)
	require.NoError(t, err)
	assert.Equal(t, &on, conv.Think)
	require.Len(t, conv.Tools, 2)
	first, err := chatfmt.ToJSON(conv.Tools[0])
	require.NoError(t, err)
	assert.Equal(t, `{"type": "function", "function": {"name": "get_weather", "description": "Weather \"now\"", "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}}`, first)
	second, err := chatfmt.ToJSON(conv.Tools[1])
	require.NoError(t, err)
	assert.Contains(t, second, `"parameters": {"type": "object", "properties": {}}`, "a tool without parameters takes none")
	require.Len(t, conv.Messages, 3)
	assert.Equal(t, `{"z":1,"a":2}`, conv.Messages[1].ToolCalls[0].Arguments)
	assert.Equal(t, `"not json"`, conv.Messages[1].ToolCalls[1].Arguments)
	assert.Equal(t, chatfmt.Message{Role: "tool", Content: "12", ToolCallID: "c1", Name: "get_weather"}, conv.Messages[2])

	_, err = conversationOf(req, []npu.Message{{Role: "user", Images: []npu.Image{{Width: 1, Height: 1, RGB: []byte{0, 0, 0}}}}})
	var invalid *npu.InvalidRequestError
	assert.ErrorAs(t, err, &invalid, "a model without a vision encoder takes no images")
}
