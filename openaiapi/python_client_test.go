package openaiapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// runOpenAIPython runs one scenario of testdata/python/openai_e2e.py (the
// official OpenAI Python client) against base.
func runOpenAIPython(t *testing.T, base, scenario string) map[string]any {
	t.Helper()
	return daemontest.RunPython(t, "openai_e2e.py", base, scenario)
}

func TestOpenAIPythonResponses(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	whole := runOpenAIPython(t, srv.URL, "responses_whole")
	assert.Equal(t, "completed", whole["status"], "%v", whole)
	assert.NotEmpty(t, whole["text"])
	assert.Equal(t, []any{"message"}, whole["types"])
	usage := whole["usage"].(map[string]any)
	assert.Equal(t, usage["input_tokens"].(float64)+usage["output_tokens"].(float64), usage["total_tokens"])

	r := runOpenAIPython(t, srv.URL, "responses_stream")
	types, _ := r["types"].([]any)
	require.NotEmpty(t, types, "%v", r)
	assert.Equal(t, "response.created", types[0])
	assert.Equal(t, "response.completed", types[len(types)-1])
	for i, n := range r["sequence"].([]any) {
		assert.Equal(t, float64(i), n)
	}
	assert.Equal(t, "completed", r["status"])
	assert.NotEmpty(t, r["text"])
	assert.Equal(t, r["text"], r["deltas"])
}

func TestOpenAIPythonResponsesToolLoop(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIPython(t, srv.URL, "responses_tool_loop")
	call, _ := r["call"].(map[string]any)
	require.NotNil(t, call, "%v", r)
	assert.Equal(t, "get_weather", call["name"])
	assert.NotEmpty(t, call["call_id"])
	assert.IsType(t, "", call["arguments"].(map[string]any)["city"])
	assert.Equal(t, "completed", r["status"])
	assert.NotEmpty(t, r["answer"])
	assert.Greater(t, r["second_input"], r["first_input"], "the call and its output are in the second prompt")
}

func TestOpenAIPythonPreviousResponse(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIPython(t, srv.URL, "responses_continue")
	assert.Greater(t, r["second_input"], r["first_input"], "the first exchange is in the second prompt: %v", r)
	assert.Equal(t, true, r["retrieved"])
	assert.Equal(t, []any{"message"}, r["input_items"])
	gone, _ := r["after_delete"].(map[string]any)
	require.NotNil(t, gone, "%v", r)
	assert.Equal(t, 404.0, gone["status"])
	assert.Equal(t, "response_not_found", gone["code"])
	assert.Equal(t, "previous_response_id", gone["param"])
}

func TestOpenAIPythonChatAndModels(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIPython(t, srv.URL, "chat")
	assert.NotEmpty(t, r["whole"], "%v", r)
	assert.Equal(t, "length", r["whole_finish"])
	assert.Equal(t, 5.0, r["whole_tokens"])
	assert.NotEmpty(t, r["streamed"])
	assert.Equal(t, "stop", r["finish"])
	assert.Greater(t, r["stream_tokens"], 0.0)
	assert.NotEmpty(t, r["models"])

	nf := runOpenAIPython(t, srv.URL, "not_found")
	assert.Equal(t, "NotFoundError", nf["error"], "%v", nf)
	assert.Equal(t, 404.0, nf["status"])
	assert.Equal(t, "model_not_found", nf["code"])
	assert.Contains(t, nf["message"], "--alias NAME=MODEL", "the 404 says how to answer to the name")
}

// Issue 37 item 5, through the official Python client: n choices whole
// and streamed (the client assembles them by index), the legacy functions
// (the call as function_call, its result sent back as a function
// message), and logprobs refused saying why.
func TestOpenAIPythonChoicesFunctionsLogprobs(t *testing.T) {
	srv := daemontest.StartEngine(t, nil, nil)
	r := runOpenAIPython(t, srv.URL, "choices")
	assert.Equal(t, []any{0.0, 1.0, 2.0}, r["indices"], "%v", r)
	assert.Equal(t, r["whole"], r["streamed"], "the same choices, whole and streamed")
	require.Len(t, r["whole"], 3)
	assert.Equal(t, []any{"length", "length", "length"}, r["finishes"])
	assert.Equal(t, 15.0, r["completion_tokens"])

	r = runOpenAIPython(t, srv.URL, "legacy_functions")
	call, _ := r["call"].(map[string]any)
	require.NotNil(t, call, "%v", r)
	assert.Equal(t, "get_weather", call["name"])
	assert.IsType(t, "", call["arguments"].(map[string]any)["city"])
	assert.Equal(t, "function_call", r["finish"])
	assert.Nil(t, r["tool_calls"])
	assert.NotEmpty(t, r["answer"])

	r = runOpenAIPython(t, srv.URL, "logprobs")
	assert.Equal(t, "BadRequestError", r["error"], "%v", r)
	assert.Equal(t, "logprobs", r["param"])
	assert.Contains(t, r["message"], "no per-token log probabilities")
}
