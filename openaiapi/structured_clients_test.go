package openaiapi_test

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/jsonschema"
)

// pydanticPerson is a schema in the shapes pydantic and OpenAI's strict
// mode give one: a nested model through $defs and $ref, an optional field
// as anyOf with null, an enum, integer bounds, an array with a length,
// additionalProperties false and every property required.
const pydanticPerson = `{
	"$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
		"required": ["city", "country"], "additionalProperties": false}},
	"type": "object",
	"properties": {
		"name": {"type": "string"},
		"age": {"type": "integer", "minimum": 0, "maximum": 150},
		"role": {"type": "string", "enum": ["admin", "user"]},
		"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
		"address": {"$ref": "#/$defs/Address"},
		"nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
		"active": {"type": "boolean"}
	},
	"required": ["name", "age", "role", "tags", "address", "nickname", "active"],
	"additionalProperties": false
}`

// validates checks that doc is valid against schema.
func validates(t *testing.T, schema, doc string) {
	t.Helper()
	s, err := jsonschema.Compile([]byte(schema))
	require.NoError(t, err)
	require.NoError(t, s.Validate([]byte(doc)), "the answer: %s", doc)
}

// Issue 37: openai-go's structured output on chat completions (json_schema
// strict, whole and streamed, and json_object) and on the Responses API
// (text.format): every answer is a document valid against the schema, on
// the simulated engine.
func TestOpenAIGoStructuredOutput(t *testing.T) {
	f := newSDKFixture(t, nil, nil)
	var schema map[string]any
	require.NoError(t, json.Unmarshal([]byte(pydanticPerson), &schema))
	for seed := range int64(5) {
		params := chatParams("Who is Ada?", seed)
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "Person", Strict: openai.Bool(true), Schema: schema}}}
		whole, err := f.client.Chat.Completions.New(sdkContext(t), params)
		require.NoError(t, err)
		assert.Equal(t, "stop", whole.Choices[0].FinishReason)
		validates(t, pydanticPerson, whole.Choices[0].Message.Content)

		acc, _ := streamChat(t, f, params)
		validates(t, pydanticPerson, acc.Choices[0].Message.Content)
		assert.Equal(t, whole.Choices[0].Message.Content, acc.Choices[0].Message.Content, "the same document, streamed")
	}

	params := chatParams("Any object", 1)
	params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	whole, err := f.client.Chat.Completions.New(sdkContext(t), params)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(whole.Choices[0].Message.Content), &obj), "JSON mode answers an object: %s", whole.Choices[0].Message.Content)

	resp, err := f.client.Responses.New(sdkContext(t), responses.ResponseNewParams{
		Model: "sim", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Who is Ada?")},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "Person", Strict: openai.Bool(true), Schema: schema}}},
	})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, resp.Status)
	validates(t, pydanticPerson, resp.OutputText())
	assert.Equal(t, "json_schema", string(resp.Text.Format.Type), "the response echoes its format")
}

// Issue 37, through the official Python client (openai, pinned): the
// parse helpers of chat completions (whole and the stream helper) and of
// the Responses API with a pydantic model get answers that parse into it.
func TestOpenAIPythonStructuredParse(t *testing.T) {
	srv := startSim(t, nil, nil)
	r := daemontest.RunPython(t, "openai_e2e.py", srv.URL, "structured_chat")
	for _, key := range []string{"whole", "streamed"} {
		p, ok := r[key].(map[string]any)
		require.True(t, ok, "%s: %v", key, r)
		assert.Contains(t, []any{"admin", "user"}, p["role"])
		assert.IsType(t, "", p["address"].(map[string]any)["city"])
	}
	assert.Equal(t, "stop", r["whole_finish"])

	r = daemontest.RunPython(t, "openai_e2e.py", srv.URL, "structured_responses")
	p, ok := r["parsed"].(map[string]any)
	require.True(t, ok, "%v", r)
	assert.IsType(t, "", p["name"])
	assert.Equal(t, "completed", r["status"])
	assert.Equal(t, "json_schema", r["format"])
}

// Issue 37: LangChain's default with_structured_output (ChatOpenAI's
// json_schema method) gets its pydantic model back.
func TestLangChainStructuredOutput(t *testing.T) {
	srv := startSim(t, nil, nil)
	r := daemontest.RunPython(t, "openai_e2e.py", srv.URL, "langchain_structured")
	assert.Equal(t, "Person", r["type"])
	p, ok := r["parsed"].(map[string]any)
	require.True(t, ok, "%v", r)
	assert.Contains(t, []any{"admin", "user"}, p["role"])
}
