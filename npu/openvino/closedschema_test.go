//go:build cgo

package openvino

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A structured answer is generated against the schema with its objects
// closed to their listed properties; keys keep their order, and what the
// schema says of other properties is kept.
func TestClosedObjects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b","a"]}`,
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b","a"],"additionalProperties":false}`},
		{`{"properties":{"x":{}},"additionalProperties":true}`, `{"properties":{"x":{}},"additionalProperties":true}`},
		{`{"$defs":{"P":{"type":"object","properties":{"n":{"type":"number"}}}},"$ref":"#/$defs/P"}`,
			`{"$defs":{"P":{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false}},"$ref":"#/$defs/P"}`},
		{`{"type":"array","items":{"anyOf":[{"properties":{"k":{"const":1.50}}},{"type":"null"}]}}`,
			`{"type":"array","items":{"anyOf":[{"properties":{"k":{"const":1.50}},"additionalProperties":false},{"type":"null"}]}}`},
		{`{"type":"object"}`, `{"type":"object"}`},
	} {
		got, err := closedObjects([]byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.JSONEq(t, tc.want, string(got), tc.in)
		assert.Equal(t, tc.want, string(got), "the keys' order is kept")
	}
	for _, bad := range []string{``, `{`, `{"a":1} {}`} {
		_, err := closedObjects([]byte(bad))
		assert.Error(t, err, bad)
	}
}
