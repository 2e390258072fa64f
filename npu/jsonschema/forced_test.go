package jsonschema_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForced(t *testing.T) {
	const person = `{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
		"required": ["name", "age"], "additionalProperties": false}`
	for _, tc := range []struct {
		name, schema, prefix, forced string
	}{
		{"object start", person, ``, `{"name": "`},
		{"inside a free string", person, `{"name": "An`, ``},
		{"after the string", person, `{"name": "Ann"`, `, "age": `},
		{"after the string, spaced", person, `{"name": "Ann" ,`, `"age": `},
		{"a number may go on", person, `{"name": "Ann", "age": 12`, ``},
		{"after the number", person, `{"name": "Ann", "age": 12 `, `}`},
		{"other order", person, `{"age": 1, `, `"name": "`},
		{"key begun", person, `{"a`, `ge": `},
		{"key in an escape", person, `{"\u00`, ``},
		{"after colon", person, `{"name"`, `: "`},
		{"whole", person, `{"name": "A", "age": 1}`, ``},
		{"the other key is required next", `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
			"required": ["a", "b"], "additionalProperties": false}`, `{"a": 1 `, `, "b": `},
		{"optional keys leave a choice", corpus["optional"], `{`, `"`},
		{"optional after required", corpus["optional"], `{"b": null`, ``},
		{"one key left", corpus["optional"], `{"b": null, "c": 1, `, `"a": `},
		{"nothing more allowed", corpus["optional"], `{"b": null, "c": 1, "a": true`, `}`},
		{"common key prefix", `{"type": "object", "properties": {"alpha": {}, "alps": {}}, "additionalProperties": false}`, `{"a`, `lp`},
		{"open object", corpus["open object"], `{"id": 1`, ``},
		{"enum of one", `{"enum": ["only"]}`, ``, `"only"`},
		{"enum of one, begun", `{"enum": ["only"]}`, `"on`, `ly"`},
		{"enum common prefix", `{"enum": ["grey", "green"]}`, ``, `"gre`},
		{"enum of escaped text", `{"enum": ["a\"b\n"]}`, `"`, `a\"b\n"`},
		{"const object", corpus["const"], ``, `{"kind": "point", "at": [1, 2.5, -3e2], "ok": true, "none": null}`},
		{"const number", `{"const": 42}`, ``, `42`},
		{"const true", `{"const": true}`, ``, `true`},
		{"literal begun", `{"type": "null"}`, `n`, `ull`},
		{"boolean is a choice", `{"type": "boolean"}`, ``, ``},
		{"max length reached", `{"type": "string", "maxLength": 2}`, `"ab`, `"`},
		{"array with min items", corpus["array"], ``, `["`},
		{"array needs more", `{"type": "array", "items": {"type": "null"}, "minItems": 2}`, `[null`, `, null`},
		{"array full", `{"type": "array", "items": {"type": "null"}, "maxItems": 1}`, `[null`, `]`},
		{"empty array forced", `{"type": "array", "maxItems": 0}`, ``, `[]`},
		{"union of objects", corpus["anyOf"], `{`, `"`},
		{"union decided", corpus["anyOf"], `{"x"`, `: `},
		{"union of types", corpus["types"], ``, ``},
		{"recursive", corpus["tree"], `{"value": 1, "children": [`, ``},
		{"recursive item", corpus["tree"], `{"value": 1, "children": [{`, `"`},
		{"after a constant number", corpus["const"], `{"kind": "point", "at": [1`, `, 2.5, -3e2], "ok": true, "none": null}`},
		{"after a constant number, spaced", corpus["const"], `{"kind": "point", "at": [1, 2.5 `, `, -3e2], "ok": true, "none": null}`},
		{"after a refused byte", person, `{"name": "A"}`, `, "age": `},
		{"a number the model ended by a refused byte", person, `{"name": "Ann", "age": 12"`, `}`},
		{"the other key after a refused byte", `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
			"required": ["a", "b"], "additionalProperties": false}`, `{"a": 1"b"`, `, "b": `},
		{"an integer the model wrote a point in", person, `{"age": 7.5`, `, "name": "`},
		{"after a refused number", `{"type": "array", "items": {"type": "integer", "maximum": 5}, "minItems": 2}`, `[9,`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := compile(t, tc.schema).NewMatcher()
			m.Push(tc.prefix)
			forced := m.Forced()
			assert.Equal(t, tc.forced, forced)
			c := compile(t, tc.schema).NewMatcher()
			c.Push(tc.prefix[:m.ValidLen()])
			assert.True(t, c.Push(forced), "forced %q after %q is refused", forced, tc.prefix[:m.ValidLen()])
		})
	}
}

// Generate writes the way Forced does, so at every point of a generated
// document what Forced gives is what comes next, and it is accepted.
func TestForcedAgreesWithGenerate(t *testing.T) {
	for name, schema := range corpus {
		s := compile(t, schema)
		for seed := range int64(20) {
			doc := string(s.Generate(seed))
			m := s.NewMatcher()
			for i := range len(doc) + 1 {
				f := m.Forced()
				// Forced writes no whitespace before a value; Generate
				// writes one after a colon.
				next := doc[i:]
				require.True(t, strings.HasPrefix(next, f) || strings.HasPrefix(strings.TrimLeft(next, " "), f), "%s seed %d: after %q Forced says %q, Generate wrote %q", name, seed, doc[:i], f, doc[i:])
				if i < len(doc) {
					require.True(t, m.Push(doc[i:i+1]))
				}
			}
			assert.True(t, m.Complete())
		}
	}
}
