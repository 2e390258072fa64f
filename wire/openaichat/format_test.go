package openaichat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
)

// parse decodes a chat request's body with the given extra fields and
// reads it as /v1/chat/completions does.
func parse(t *testing.T, extra string) (*npu.Request, *Error) {
	t.Helper()
	body := `{"model":"sim","messages":[{"role":"user","content":"hi"}]` + extra + `}`
	var req openaiwire.ChatRequest
	require.NoError(t, json.Unmarshal([]byte(body), &req), body)
	return EngineRequest(&req, Chat, 0)
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`

// response_format in each form OpenAI takes, and each bad one refused with
// a 400 naming its parameter.
func TestResponseFormat(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name   string
		extra  string
		want   *npu.Format
		param  string // the refusal's, "" when accepted
		phrase string
	}{
		{"absent", ``, nil, "", ""},
		{"null", `,"response_format":null`, nil, "", ""},
		{"text", `,"response_format":{"type":"text"}`, nil, "", ""},
		{"json_object", `,"response_format":{"type":"json_object"}`, &npu.Format{Type: npu.FormatJSONObject}, "", ""},
		{"json_schema strict, as openai's parse sends it",
			`,"response_format":{"type":"json_schema","json_schema":{"name":"Person","strict":true,"schema":` + personSchema + `}}`,
			&npu.Format{Type: npu.FormatJSONSchema, Name: "Person", Schema: json.RawMessage(personSchema), Strict: yes}, "", ""},
		{"json_schema with a description, not strict",
			`,"response_format":{"type":"json_schema","json_schema":{"name":"a-b_9","description":"d","schema":{"type":"object"}}}`,
			&npu.Format{Type: npu.FormatJSONSchema, Name: "a-b_9", Schema: json.RawMessage(`{"type":"object"}`)}, "", ""},
		{"unknown type", `,"response_format":{"type":"xml"}`, nil, "response_format.type", `must be text, json_object or json_schema, got "xml"`},
		{"json_schema without its object", `,"response_format":{"type":"json_schema"}`, nil, "response_format.json_schema", "'response_format.json_schema' is required"},
		{"json_schema without a name", `,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`, nil, "response_format.json_schema.name", "is required"},
		{"a name OpenAI refuses", `,"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`, nil, "response_format.json_schema.name", "1 to 64 characters"},
		{"a name too long", `,"response_format":{"type":"json_schema","json_schema":{"name":"` + strings.Repeat("x", 65) + `","schema":{}}}`, nil, "response_format.json_schema.name", "1 to 64 characters"},
		{"no schema", `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`, nil, "response_format.json_schema.schema", "a JSON Schema is required"},
		{"a schema that is no object", `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":true}}`, nil, "response_format.json_schema.schema", "must be a JSON object"},
		{"a schema too large", `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"description":"` + strings.Repeat("x", npu.MaxSchemaBytes) + `"}}}`,
			nil, "response_format.json_schema.schema", "at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.extra)
			if tc.param != "" {
				require.NotNil(t, err, "accepted")
				assert.Equal(t, 400, err.Status)
				assert.Equal(t, tc.param, err.Param)
				assert.Contains(t, err.Message, tc.phrase)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.want, req.Format)
		})
	}
}

// The legacy functions and function_call become tools and a tool choice;
// the conversation's legacy function_call and function messages become
// calls and their results.
func TestLegacyFunctions(t *testing.T) {
	fns := `,"functions":[{"name":"get_weather","description":"d","parameters":{"type":"object"}},{"name":"now"}]`
	for _, tc := range []struct {
		name   string
		extra  string
		choice npu.ToolChoice
		param  string
		phrase string
	}{
		{"functions alone", fns, npu.ToolChoice{}, "", ""},
		{"function_call auto", fns + `,"function_call":"auto"`, npu.ToolChoice{Mode: "auto"}, "", ""},
		{"function_call none", fns + `,"function_call":"none"`, npu.ToolChoice{Mode: "none"}, "", ""},
		{"function_call by name", fns + `,"function_call":{"name":"now"}`, npu.ToolChoice{Mode: "function", Name: "now"}, "", ""},
		{"function_call naming no function", fns + `,"function_call":{"name":"later"}`, npu.ToolChoice{}, "function_call", `names function "later"`},
		{"function_call required is not a legacy mode", fns + `,"function_call":"required"`, npu.ToolChoice{}, "function_call", `got "required"`},
		{"function_call without functions", `,"function_call":"auto"`, npu.ToolChoice{}, "function_call", "needs 'functions'"},
		{"both functions and tools", fns + `,"tools":[{"type":"function","function":{"name":"x"}}]`, npu.ToolChoice{}, "functions", "not both"},
		{"a bad function name", `,"functions":[{"name":"a b"}]`, npu.ToolChoice{}, "functions[0].name", "1 to 64 characters"},
		{"a function declared twice", `,"functions":[{"name":"a"},{"name":"a"}]`, npu.ToolChoice{}, "functions[1].name", "declared twice"},
		{"parameters that are no schema", `,"functions":[{"name":"a","parameters":[1]}]`, npu.ToolChoice{}, "functions[0].parameters", "JSON schema object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parse(t, tc.extra)
			if tc.param != "" {
				require.NotNil(t, err, "accepted")
				assert.Equal(t, tc.param, err.Param)
				assert.Contains(t, err.Message, tc.phrase)
				return
			}
			require.Nil(t, err)
			require.Len(t, req.Tools, 2)
			assert.Equal(t, npu.Tool{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}, req.Tools[0])
			assert.Equal(t, "now", req.Tools[1].Name)
			assert.Equal(t, tc.choice, req.ToolChoice)
			assert.True(t, req.SingleToolCall, "a legacy answer holds one call")
		})
	}

	t.Run("the conversation's calls and results", func(t *testing.T) {
		body := `{"model":"sim","functions":[{"name":"now"}],"messages":[{"role":"user","content":"time?"},
			{"role":"assistant","content":null,"function_call":{"name":"now","arguments":"{}"}},
			{"role":"function","name":"now","content":"12:00"},
			{"role":"assistant","content":null,"function_call":{"name":"now","arguments":"{\"tz\":\"UTC\"}"}},
			{"role":"function","name":"now","content":"11:00"}]}`
		var req openaiwire.ChatRequest
		require.NoError(t, json.Unmarshal([]byte(body), &req))
		out, err := EngineRequest(&req, Chat, 0)
		require.Nil(t, err)
		require.Len(t, out.Messages, 5)
		assert.Equal(t, []npu.ToolCall{{ID: "call_fn_1", Name: "now", Arguments: "{}"}}, out.Messages[1].ToolCalls)
		assert.Equal(t, npu.Message{Role: "tool", Content: "12:00", ToolCallID: "call_fn_1", ToolName: "now"}, out.Messages[2])
		assert.Equal(t, npu.Message{Role: "tool", Content: "11:00", ToolCallID: "call_fn_3", ToolName: "now"}, out.Messages[4],
			"a result answers the latest call of its function")
	})
	for _, tc := range []struct{ name, messages, param, phrase string }{
		{"a function message without a name", `{"role":"function","content":"x"}`, "messages[1].name", "is required"},
		{"a function message answering no call", `{"role":"function","name":"now","content":"x"}`, "messages[1].name", "no earlier assistant message's function_call"},
		{"a user message with a function_call", `{"role":"user","content":"x","function_call":{"name":"now","arguments":"{}"}}`, "messages[1].function_call", "only assistant messages"},
		{"a function_call without a name", `{"role":"assistant","content":null,"function_call":{"arguments":"{}"}}`, "messages[1].function_call.name", "is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"sim","functions":[{"name":"now"}],"messages":[{"role":"user","content":"hi"},` + tc.messages + `]}`
			var req openaiwire.ChatRequest
			require.NoError(t, json.Unmarshal([]byte(body), &req))
			_, err := EngineRequest(&req, Chat, 0)
			require.NotNil(t, err, "accepted")
			assert.Equal(t, tc.param, err.Param)
			assert.Contains(t, err.Message, tc.phrase)
		})
	}
}

// n is 1 to MaxChoices; log probabilities are refused saying why.
func TestChoicesAndLogprobs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extra  string
		param  string
		phrase string
	}{
		{"n 1", `,"n":1`, "", ""},
		{"n 8", `,"n":8`, "", ""},
		{"n 9", `,"n":9`, "n", "from 1 to 8"},
		{"n 0", `,"n":0`, "n", "from 1 to 8"},
		{"logprobs false", `,"logprobs":false`, "", ""},
		{"logprobs true", `,"logprobs":true`, "logprobs", "no per-token log probabilities"},
		{"legacy logprobs count", `,"logprobs":3`, "logprobs", "OpenVINO GenAI's C API"},
		{"top_logprobs", `,"logprobs":false,"top_logprobs":2`, "top_logprobs", "no per-token log probabilities"},
		{"top_logprobs 0", `,"top_logprobs":0`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.extra)
			if tc.param == "" {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err, "accepted")
			assert.Equal(t, tc.param, err.Param)
			assert.Contains(t, err.Message, tc.phrase)
		})
	}
}
