package jsonschema_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/jsonschema"
)

func compile(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.Compile([]byte(schema))
	require.NoError(t, err, schema)
	return s
}

func TestCompileRefusesWhatItCannotGuarantee(t *testing.T) {
	for _, tc := range []struct {
		schema, keyword, path string
	}{
		{`{"type": "string", "pattern": "^a"}`, "pattern", ""},
		{`{"type": "string", "format": "email"}`, "format", ""},
		{`{"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}}`, "uniqueItems", "/properties/a"},
		{`{"patternProperties": {"^x": {}}}`, "patternProperties", ""},
		{`{"if": {}, "then": {}, "else": {}}`, "if", ""},
		{`{"properties": {"a~b/c": {"not": {"type": "null"}}}}`, "not", "/properties/a~0b~1c"},
		{`{"allOf": [{"type": "string"}, {"type": "integer"}]}`, "allOf", "/allOf/1 (type conflicts)"},
		{`{"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]}`, "allOf", "/allOf/1 (additionalProperties conflicts)"},
		{`{"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}`, "oneOf", "/oneOf (branches 0 and 1 may both match)"},
		{`{"oneOf": [{"type": "number"}, {"type": "integer"}]}`, "oneOf", "/oneOf (branches 0 and 1 may both match)"},
		{`{"type": "array", "items": [{"type": "string"}]}`, "items", "/items (an array of schemas)"},
		{`{"type": "array", "prefixItems": [{"type": "string"}]}`, "prefixItems", ""},
		{`{"type": "object", "minProperties": 1}`, "minProperties", ""},
		{`{"$ref": "https://example.com/s.json"}`, "$ref", "/$ref"},
		{`{"$ref": "#/$defs/a", "minLength": 2, "$defs": {"a": {"type": "string"}}}`, "minLength", "/minLength (beside $ref)"},
		{`{"properties": {"a": {"$defs": {}}}}`, "$defs", "/properties/a"},
		{`{"type": "number", "multipleOf": 2}`, "multipleOf", ""},
		{`{"x-custom": 1}`, "x-custom", ""},
	} {
		t.Run(tc.keyword, func(t *testing.T) {
			_, err := jsonschema.Compile([]byte(tc.schema))
			var unsupported *jsonschema.UnsupportedError
			require.ErrorAs(t, err, &unsupported, tc.schema)
			assert.Equal(t, tc.keyword, unsupported.Keyword)
			assert.Equal(t, tc.path, unsupported.Path)
			assert.Contains(t, err.Error(), fmt.Sprintf("schema keyword %q at ", tc.keyword))
		})
	}
	err := (&jsonschema.UnsupportedError{Keyword: "X", Path: "/properties/a"}).Error()
	assert.Equal(t, `schema keyword "X" at /properties/a is not supported`, err)
}

func TestCompileRefusesBadOrUnsatisfiableSchemas(t *testing.T) {
	for name, schema := range map[string]string{
		"not json":          `{"type": `,
		"bad type":          `{"type": "str"}`,
		"false":             `false`,
		"enum of nothing":   `{"type": "integer", "enum": ["a", "b"]}`,
		"const not allowed": `{"type": "string", "maxLength": 1, "const": "ab"}`,
		"empty range":       `{"type": "integer", "minimum": 3, "exclusiveMaximum": 3}`,
		"min over max":      `{"type": "string", "minLength": 3, "maxLength": 2}`,
		"missing def":       `{"$ref": "#/$defs/nope"}`,
		"ref cycle":         `{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}`,
		"infinite": `{"$ref": "#/$defs/a", "$defs": {"a": {"type": "object", "properties": {"next": {"$ref": "#/$defs/a"}},
			"required": ["next"]}}}`,
		"infinite optional part": `{"type": "object", "properties": {"a": {"$ref": "#/$defs/loop"}},
			"$defs": {"loop": {"type": "array", "items": {"$ref": "#/$defs/loop"}, "minItems": 1}}}`,
		"too many alternatives": manyEnum(1025),
		"required forbidden":    `{"type": "object", "required": ["a"], "additionalProperties": false}`,
		"negative bound":        `{"type": "array", "maxItems": -1}`,
		"duplicate key":         `{"type": "string", "type": "number"}`,
		"too deep":              strings.Repeat(`{"items": `, 70) + `{}` + strings.Repeat(`}`, 70),
		"too large":             `{"description": "` + strings.Repeat("x", jsonschema.MaxSchemaBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := jsonschema.Compile([]byte(schema))
			var schemaErr *jsonschema.SchemaError
			require.ErrorAs(t, err, &schemaErr)
		})
	}
	// Enum values multiply through nested anyOf; the count is bounded.
	var b strings.Builder
	b.WriteString(`{"enum": [`)
	for i := range jsonschema.MaxNodes + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%d", i)
	}
	b.WriteString(`]}`)
	_, err := jsonschema.Compile([]byte(b.String()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too many schemas")
}

// Both readers of a document, whole and streamed, must say the same.
func check(t *testing.T, s *jsonschema.Schema, doc string) (valid bool, validLen int) {
	t.Helper()
	verr := s.Validate([]byte(doc))
	whole := s.NewMatcher()
	ok := whole.Push(doc) && whole.Complete()
	assert.Equal(t, verr == nil, ok, "Validate (%v) and the matcher disagree on %q", verr, doc)
	bytewise := s.NewMatcher()
	for i := range len(doc) {
		if !bytewise.Push(doc[i : i+1]) {
			break
		}
	}
	assert.Equal(t, whole.ValidLen(), bytewise.ValidLen(), "split changes ValidLen of %q", doc)
	assert.Equal(t, whole.Complete(), bytewise.Complete(), "split changes Complete of %q", doc)
	assert.LessOrEqual(t, whole.ValidLen(), len(doc))
	return ok, whole.ValidLen()
}

func TestDocuments(t *testing.T) {
	const person = `{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150}},
		"required": ["name", "age"], "additionalProperties": false}`
	for _, tc := range []struct {
		name, schema, doc string
		valid             bool
		validLen          int // for an invalid document: the kept prefix (-1: the whole is a prefix, only incomplete)
	}{
		{"object", person, `{"name": "Ann", "age": 31}`, true, 0},
		{"any order", person, ` {"age":31,"name":"Ann"} `, true, 0},
		{"escapes", person, `{"name": "A\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "age": 0}`, true, 0},
		{"duplicate key", person, `{"name": "A", "name": "B", "age": 1}`, false, len(`{"name": "A", "`)},
		{"unknown key", person, `{"nam": "A"}`, false, len(`{"nam"`) - 1},
		{"key prefix of none", person, `{"x": 1}`, false, len(`{"`)},
		{"missing required", person, `{"name": "A"}`, false, len(`{"name": "A"`)},
		{"incomplete", person, `{"name": "A", "age": 3`, false, -1},
		{"over maximum", person, `{"name": "A", "age": 151}`, false, len(`{"name": "A", "age": `)},
		{"fraction for integer", person, `{"name": "A", "age": 1.5}`, false, len(`{"name": "A", "age": 1`)},
		{"exponent for integer", person, `{"name": "A", "age": 1e2}`, false, len(`{"name": "A", "age": 1`)},
		{"trailing comma", person, `{"name": "A", "age": 1,}`, false, len(`{"name": "A", "age": 1`)},
		{"text after", person, `{"name": "A", "age": 1} x`, false, len(`{"name": "A", "age": 1} `)},
		{"leading zero", `{"type": "number"}`, `01`, false, 1},
		{"lone high surrogate", `{"type": "string"}`, `"\ud83d"`, false, len(`"\ud83d`)},
		{"lone low surrogate", `{"type": "string"}`, `"\udc00"`, false, len(`"\ud`)},
		{"bad escape", `{"type": "string"}`, `"\x"`, false, 2},
		{"raw newline", `{"type": "string"}`, "\"a\nb\"", false, 2},
		{"bad utf-8", `{"type": "string"}`, "\"a\xc3\x28\"", false, 3},
		{"overlong utf-8", `{"type": "string"}`, "\"\xc0\xaf\"", false, 1},
		{"encoded surrogate", `{"type": "string"}`, "\"\xed\xa0\x80\"", false, 2},
		{"max length counts code points", `{"type": "string", "maxLength": 2}`, `"日本"`, true, 0},
		{"over max length", `{"type": "string", "maxLength": 2}`, `"日本語"`, false, len(`"日本`)},
		{"under min length", `{"type": "string", "minLength": 2}`, `"a"`, false, 2},
		{"enum", corpus["enum"], `"grey"`, true, 0},
		{"enum escaped", corpus["enum"], `"a\"b\\c"`, true, 0},
		{"enum by escapes", corpus["enum"], `"\u65e5\u672c"`, true, 0},
		{"enum miss", corpus["enum"], `"gray"`, false, 3},
		{"enum miss in a character", corpus["enum"], "\"\xe6\x97\xa6", false, 3},
		{"enum miss in an escape", corpus["enum"], `"\u65e6"`, false, 6},
		{"enum astral by escapes", corpus["enum"], `"\ud83d\ude00"`, true, 0},
		{"enum astral miss in the low half", corpus["enum"], `"\ud83d\ude01"`, false, 12},
		{"enum astral miss in the high half", corpus["enum"], `"\ud83e`, false, 6},
		{"enum prefix", corpus["enum"], `"gre"`, false, 4},
		{"const", corpus["const"], `{"none": null, "ok": true, "at": [1, 2.50, -300], "kind": "point"}`, true, 0},
		{"const wrong number", corpus["const"], `{"kind": "point", "at": [2`, false, -1},
		{"const number checked at its end", corpus["const"], `{"kind": "point", "at": [2]`, false, len(`{"kind": "point", "at": [`)},
		{"const extra key", corpus["const"], `{"kind": "point", "x"`, false, len(`{"kind": "point", "`)},
		{"exclusive maximum", corpus["number"], `10`, false, -1},
		{"exclusive maximum ended", corpus["number"], `10 `, false, 0},
		{"below minimum", corpus["number"], ` -1.6 `, false, 1},
		{"in range", corpus["number"], `9.99e0`, true, 0},
		{"exclusive minimum", corpus["int"], `0`, false, -1},
		{"exclusive minimum in an array", `{"type": "array", "items": ` + corpus["int"] + `}`, `[1, 0]`, false, 4},
		{"type list null", corpus["types"], `null`, true, 0},
		{"type list string bound", corpus["types"], `"abcd"`, false, 4},
		{"type list no bool", corpus["types"], `true`, false, 0},
		{"anyOf first", corpus["anyOf"], `{"x": 1}`, true, 0},
		{"anyOf second", corpus["anyOf"], `{"y": "a"}`, true, 0},
		{"anyOf third", corpus["anyOf"], `[true, false]`, true, 0},
		{"anyOf mixed", corpus["anyOf"], `{"x": 1, "y": "a"}`, false, len(`{"x": 1`)},
		{"oneOf by const", corpus["oneOf"], `{"kind": "dog", "good": true}`, true, 0},
		{"oneOf wrong branch key", corpus["oneOf"], `{"kind": "dog", "lives": 9}`, false, len(`{"kind": "dog", "`)},
		{"recursive", corpus["tree"], `{"value": 1, "children": [{"value": 2, "children": []}, {"value": 3}]}`, true, 0},
		{"recursive bad", corpus["tree"], `{"value": 1, "children": [{"children": []}]}`, false, len(`{"value": 1, "children": [{"children": []`)},
		{"definitions", corpus["definitions"], `{"steps": [{"explanation": "e", "output": "o"}], "final_answer": "x"}`, true, 0},
		{"pydantic", corpus["pydantic"], `{"color": "blue", "maybe": null, "tags": ["a"]}`, true, 0},
		{"pydantic bad enum", corpus["pydantic"], `{"color": "green"}`, false, len(`{"color": "`)},
		{"allOf", corpus["allOf"], `{"b": 2, "a": "x", "c": []}`, true, 0},
		{"allOf missing", corpus["allOf"], `{"a": "x"}`, false, len(`{"a": "x"`)},
		{"typed extras", corpus["typed extras"], `{"a": 1, "b": 10}`, false, len(`{"a": 1, "b": `)},
		{"extra dup", corpus["typed extras"], `{"a": 1, "a": 2}`, false, len(`{"a": 1, "a"`) - 1},
		{"min items", corpus["array"], `[]`, false, 1},
		{"max items", corpus["array"], `["ab", "cd", "ef", "gh"]`, false, len(`["ab", "cd", "ef"`)},
		{"any", corpus["any"], `[1, {"a": [null, true, "x"]}, -0.5e-3]`, true, 0},
		{"any number alone", corpus["any"], ` 12 `, true, 0},
		{"any incomplete number", corpus["any"], `-`, false, -1},
		{"escaped keys", corpus["escaped keys"], `{"a/b~c": true, "\u00e9\"": null}`, true, 0},
		{"deep", corpus["any"], strings.Repeat("[", jsonschema.MaxDocumentDepth) + strings.Repeat("]", jsonschema.MaxDocumentDepth), true, 0},
		{"too deep", corpus["any"], strings.Repeat("[", jsonschema.MaxDocumentDepth+1), false, jsonschema.MaxDocumentDepth},
		{"long number", corpus["any"], "1" + strings.Repeat("0", jsonschema.MaxNumberBytes), false, jsonschema.MaxNumberBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			valid, validLen := check(t, compile(t, tc.schema), tc.doc)
			assert.Equal(t, tc.valid, valid)
			switch {
			case tc.valid:
				assert.Equal(t, len(tc.doc), validLen)
			case tc.validLen < 0:
				assert.Equal(t, len(tc.doc), validLen, "the whole is a valid prefix")
			default:
				assert.Equal(t, tc.validLen, validLen, "kept %q", tc.doc[:validLen])
			}
		})
	}
}

func TestPushAfterRefusalIsIgnored(t *testing.T) {
	m := compile(t, `{"type": "boolean"}`).NewMatcher()
	assert.True(t, m.Push("tr"))
	assert.False(t, m.Push("x"))
	assert.False(t, m.Push("ue"))
	assert.Equal(t, 2, m.ValidLen())
	assert.False(t, m.Complete())
	assert.Equal(t, "ue", m.Forced(), "Forced answers from the valid prefix")
}

func TestValidateErrors(t *testing.T) {
	s := compile(t, corpus["person"])
	err := s.Validate([]byte(`{"name": 1, "age": 2}`))
	require.ErrorIs(t, err, jsonschema.ErrInvalid)
	assert.Contains(t, err.Error(), "/name")
	assert.True(t, errors.Is(s.Validate([]byte(`{`)), jsonschema.ErrInvalid))
}

// Readings that stay ambiguous multiply with depth; past MaxLiveStates the
// matcher refuses (fails closed) instead of growing without bound.
func TestLiveReadingsAreBounded(t *testing.T) {
	s := compile(t, `{"$ref": "#/$defs/t", "$defs": {"t": {"anyOf": [
		{"type": "array", "items": {"$ref": "#/$defs/t"}},
		{"type": "array", "items": {"$ref": "#/$defs/t"}, "maxItems": 5}]}}}`)
	m := s.NewMatcher()
	depth := 0
	for m.Push("[") {
		depth++
		require.Less(t, depth, 64, "never refused")
	}
	assert.Equal(t, 10, depth, "2^11 readings pass the bound at the 11th bracket")
	assert.Equal(t, 10, m.ValidLen())
}

// manyEnum is a schema of n distinct strings.
func manyEnum(n int) string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("%q", fmt.Sprint("v", i))
	}
	return `{"enum": [` + strings.Join(values, ", ") + `]}`
}
