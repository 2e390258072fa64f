package anthropicapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// output_config.format as the anthropic package sends it reaches the
// engine as the request's Format (it was silently dropped before: the
// answer came back free text and the SDK's parse failed later), as does
// the deprecated output_format; each bad form is a 400 naming its field.
func TestOutputFormat(t *testing.T) {
	const schema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	for _, tc := range []struct {
		name   string
		extra  string
		want   *npu.Format
		phrase string // the refusal's, "" when accepted
	}{
		{"none", ``, nil, ""},
		{"effort alone, as Claude Code sends it", `,"output_config":{"effort":"high"}`, nil, ""},
		{"output_config.format, as messages.parse sends it", `,"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`,
			&npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(schema), Strict: true}, ""},
		{"with effort", `,"output_config":{"effort":"low","format":{"type":"json_schema","schema":{"type":"object"}}}`,
			&npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`), Strict: true}, ""},
		{"the deprecated output_format", `,"output_format":{"type":"json_schema","schema":{"type":"object"}}`,
			&npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`), Strict: true}, ""},
		{"format null", `,"output_config":{"format":null}`, nil, ""},
		{"another type", `,"output_config":{"format":{"type":"json_object"}}`, nil, `output_config.format.type: must be json_schema, got "json_object"`},
		{"no schema", `,"output_config":{"format":{"type":"json_schema"}}`, nil, "output_config.format.schema: a JSON Schema is required"},
		{"a schema that is no object", `,"output_config":{"format":{"type":"json_schema","schema":"x"}}`, nil, "output_config.format.schema: the schema must be a JSON object"},
		{"a schema too large", `,"output_config":{"format":{"type":"json_schema","schema":{"description":"` + strings.Repeat("x", npu.MaxSchemaBytes) + `"}}}`,
			nil, "output_config.format.schema: the schema is"},
		{"the deprecated one, bad", `,"output_format":{"type":"text"}`, nil, `output_format.type: must be json_schema`},
		{"both places", `,"output_format":{"type":"json_schema","schema":{}},"output_config":{"format":{"type":"json_schema","schema":{}}}`, nil, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req request
			require.NoError(t, json.Unmarshal([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]`+tc.extra+`}`), &req))
			p, apiErr := req.toEngineRequest(0)
			if tc.phrase != "" {
				require.NotNil(t, apiErr, "accepted")
				assert.Equal(t, 400, apiErr.Status)
				assert.Contains(t, apiErr.Message, tc.phrase)
				return
			}
			require.Nil(t, apiErr)
			assert.Equal(t, tc.want, p.req.Format)
		})
	}
}
