package chatfmt

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without an indent, minja's dump is ToJSON's text; with one, every
// container of minja's opens and closes on lines of its own, even an
// empty one, where nlohmann's (the polyfills' JSON) keeps "{}" and "[]".
func TestMinjaAndNlohmannDumps(t *testing.T) {
	for _, tc := range []struct{ in, minja2, nlohmann2 string }{
		{`{"a":[],"b":{}}`, "{\n  \"a\": [\n    \n  ],\n  \"b\": {\n    \n  }\n}", "{\n  \"a\": [],\n  \"b\": {}\n}"},
		{`[1, 2.50, "x\n"]`, "[\n  1,\n  2.5,\n  \"x\\n\"\n]", "[\n  1,\n  2.5,\n  \"x\\n\"\n]"},
		{`{}`, "{\n  \n}", "{}"},
		{`"Tromsø"`, `"Tromsø"`, `"Tromsø"`},
		{`{"z":1,"a":{"k":[true,null]}}`, "{\n  \"z\": 1,\n  \"a\": {\n    \"k\": [\n      true,\n      null\n    ]\n  }\n}",
			"{\n  \"z\": 1,\n  \"a\": {\n    \"k\": [\n      true,\n      null\n    ]\n  }\n}"},
	} {
		v, err := parseJSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		var compact, minja, nlohmann strings.Builder
		minjaDump(&compact, v, -1, 0)
		minjaDump(&minja, v, 2, 0)
		nlohmannDump(&nlohmann, v, 2, 0)
		want, err := ToJSON([]byte(tc.in))
		require.NoError(t, err)
		assert.Equal(t, want, compact.String(), tc.in)
		assert.Equal(t, tc.minja2, minja.String(), tc.in)
		assert.Equal(t, tc.nlohmann2, nlohmann.String(), tc.in)
	}
	for _, bad := range []string{``, `{`, `{"a":1} 2`, `[1,]`} {
		_, err := parseJSON([]byte(bad))
		assert.Error(t, err, bad)
		assert.Equal(t, jsonString(bad), callArguments(bad), "arguments that are no JSON stay a string")
	}
}

// minja's == between messages: equal fields, each true to Jinja, so a
// message with empty content equals no message, not even itself.
func TestMinjaEqualMessages(t *testing.T) {
	hi := Message{Role: "user", Content: "Hi"}
	assert.True(t, minjaEqualMessages(hi, hi))
	assert.False(t, minjaEqualMessages(hi, Message{Role: "user", Content: "Hi", Name: "x"}))
	assert.False(t, minjaEqualMessages(Message{Role: "user"}, Message{Role: "user"}))
}
