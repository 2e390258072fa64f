package jsonbody

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Issue 35: every body that does not decode is said in the client's terms,
// never with the decoder's Go type names.
func TestUnmarshalSaysWhatIsWrongInJSONTerms(t *testing.T) {
	type request struct {
		Model string `json:"model"`
	}
	for _, tc := range []struct{ body, code, want string }{
		{``, "invalid_json", "the request body is empty: it must be a JSON object"},
		{"\t\n ", "invalid_json", "the request body is empty: it must be a JSON object"},
		{`[1]`, "invalid_type", "the request body must be an object, got array"},
		{`42`, "invalid_type", "the request body must be an object, got number"},
		{`{"model":`, "invalid_json", "the request body is not valid JSON: it ends at byte 9 before its JSON does (unexpected end of JSON input)"},
		{`{"model":x}`, "invalid_json", "the request body is not valid JSON: at byte 10, invalid character 'x' looking for beginning of value"},
		{`{"model":1}`, "invalid_type", "invalid type for field 'model': expected a string, got number"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var r request
			err := Unmarshal([]byte(tc.body), &r)
			if assert.NotNil(t, err) {
				assert.Equal(t, tc.code, err.Code)
				assert.Equal(t, tc.want, err.Message)
				assert.NotContains(t, err.Message, "Go value")
			}
		})
	}
}
