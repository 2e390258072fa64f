// Package openaiwire declares OpenAI's chat completion wire (the request,
// its messages and tools, the stream's chunks, tool-call deltas, usage and
// finish reasons, and the JSON strings its chunks carry) for every side of
// npud that reads or writes it: the API that serves it (openaiapi, and the
// WebSocket that speaks its deltas) and the upstream engine that is its
// client (npu/upstream). One declaration,
// so that what npud sends and what it accepts cannot drift apart. It
// imports nothing of npud's but npu/wirefmt/jsonbody (for its decoding errors),
// which imports nothing, so every layer may use it.
package openaiwire

import "encoding/json"

// ToolCall is a call in an assistant message's tool_calls, whole.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls, and its arguments as the
// JSON text the model wrote.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is a piece of a tool call in a stream's delta.tool_calls:
// the first piece of a call has its id, type and name, the next ones
// pieces of its arguments.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is a ToolCallDelta's piece of the function.
type FunctionCallDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Tool is a tool a request declares. Function is a pointer so that a
// server can tell a tool without one from an empty one.
type Tool struct {
	Type     string    `json:"type"` // "function"
	Function *Function `json:"function"`
}

// Function is a declared tool's function: its name, what it does, and the
// JSON Schema of its parameters.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}
