package sim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/jsonschema"
	"github.com/npud/npud/npu/serve"
)

var formats = map[string]*npu.Format{
	"json mode": {Type: npu.FormatJSONObject},
	"person": {Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"type": "object", "properties": {
		"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
		"tags": {"type": "array", "items": {"enum": ["a", "日本", "😀"]}, "maxItems": 3}},
		"required": ["name", "age", "tags"], "additionalProperties": false}`)},
	"steps": {Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"$defs": {"step": {"type": "object",
		"properties": {"explanation": {"type": "string"}, "output": {"type": "string"}},
		"required": ["explanation", "output"], "additionalProperties": false}},
		"type": "object", "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}, "minItems": 1},
		"final_answer": {"type": "string"}}, "required": ["steps", "final_answer"], "additionalProperties": false}`)},
	"choice": {Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0.5, "maximum": 1}]}`)},
}

func schemaOf(t *testing.T, f *npu.Format) *jsonschema.Schema {
	t.Helper()
	if f.Type == npu.FormatJSONObject {
		return jsonschema.AnyObject()
	}
	s, err := jsonschema.Compile(f.Schema)
	require.NoError(t, err)
	return s
}

// Asked for structured output, the simulated model answers Generate of
// the request's seed, valid against the format, streamed a few bytes a
// token like its text, the same for the same seed.
func TestAnswersTheFormat(t *testing.T) {
	e := New(Config{})
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			schema := schemaOf(t, f)
			docs := map[string]bool{}
			for n := range int64(10) {
				req := &npu.Request{Model: ModelID, Prompt: "describe someone", Sampling: npu.Sampling{Seed: seed(n)}, Format: f}
				rec := &recorder{}
				res, err := e.Generate(t.Context(), req, rec.sink)
				require.NoError(t, err)
				doc := strings.Join(rec.chunks, "")
				assert.Equal(t, string(schema.Generate(n)), doc)
				require.NoError(t, schema.Validate([]byte(doc)), doc)
				assert.Equal(t, npu.FinishStop, res.FinishReason)
				assert.Equal(t, len(rec.chunks), res.CompletionTokens)
				if len(doc) > 6 {
					assert.Greater(t, len(rec.chunks), 1, "streamed in pieces")
				}
				for _, c := range rec.chunks {
					assert.LessOrEqual(t, len([]rune(c)), 6)
				}
				docs[doc] = true
			}
			assert.Greater(t, len(docs), 1, "seeds vary the document")
		})
	}
}

// Through the router and the bridge: the answer comes back whole and
// valid; cut short by max_tokens it ends with structured_output_failed
// after a valid prefix; reasoning comes before it, apart; a schema npud
// cannot guarantee is refused before the engine runs.
func TestStructuredThroughTheBridge(t *testing.T) {
	r, rec := newRouter(t, Config{}, serve.StreamLimits{})
	for name, f := range formats {
		schema := schemaOf(t, f)
		think := true
		req := &npu.Request{Model: ModelID, Messages: []npu.Message{{Role: "user", Content: "x"}}, Sampling: npu.Sampling{Seed: seed(7)},
			Format: f, Think: &think}
		s, err := r.Start(req)
		require.NoError(t, err)
		a, err := npu.CollectAnswer(t.Context(), s.Next)
		s.Close()
		require.NoError(t, err, name)
		assert.NoError(t, schema.Validate([]byte(a.Text)), "%s: %s", name, a.Text)
		assert.Equal(t, string(schema.Generate(7)), a.Text)
		assert.NotEmpty(t, a.Reasoning)
		assert.Equal(t, npu.FinishStop, a.Result.FinishReason)
	}

	f := formats["steps"]
	full := string(schemaOf(t, f).Generate(1))
	s, err := r.Start(&npu.Request{Model: ModelID, Messages: []npu.Message{{Role: "user", Content: "x"}}, Sampling: npu.Sampling{Seed: seed(1)},
		Format: f, MaxTokens: 3})
	require.NoError(t, err)
	defer s.Close()
	a, err := npu.CollectAnswer(t.Context(), s.Next)
	require.ErrorIs(t, err, npu.ErrStructuredOutput)
	assert.Equal(t, "structured_output_failed", npu.ErrorCode(err))
	assert.NotEmpty(t, a.Text)
	assert.True(t, strings.HasPrefix(full, a.Text), "%q is a prefix of %q", a.Text, full)
	assert.Less(t, len(a.Text), len(full))

	calls := len(rec.recs)
	_, err = r.Start(&npu.Request{Model: ModelID, Messages: []npu.Message{{Role: "user", Content: "x"}},
		Format: &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"type": "string", "pattern": "^a"}`)}})
	var ie *npu.InvalidRequestError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Message, `schema keyword "pattern" at / is not supported`)
	assert.Len(t, rec.recs, calls, "the engine did not run")
}

// Called directly (not through the router), the engine refuses a schema
// it cannot answer as a request error.
func TestRefusesAnUnsupportedSchema(t *testing.T) {
	_, err := New(Config{}).Generate(t.Context(), &npu.Request{Model: ModelID, Prompt: "x",
		Format: &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"not": {}}`)}}, func(string) npu.Status { return npu.Running })
	var ie *npu.InvalidRequestError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "response_format", ie.Param)
}
