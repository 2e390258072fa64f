package openaiwire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message's content is read in every shape clients send it, and written
// as OpenAI reads it: what the API accepts and what the upstream engine
// sends are the one type.
func TestContent(t *testing.T) {
	tests := []struct {
		name, in string
		want     Content
		out      string // what it encodes as
	}{
		{"string", `"hi"`, Content{Text: "hi", Present: true}, `"hi"`},
		{"null", `null`, Content{Present: true, Null: true}, `null`},
		{"text parts", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, Content{Text: "ab", Present: true}, `"ab"`},
		{"image parts", `[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"image_url","image_url":"data:y"}]`,
			Content{Text: "look", ImageURLs: []string{"data:x", "data:y"}, Present: true},
			`[{"text":"look","type":"text"},{"image_url":{"url":"data:x"},"type":"image_url"},{"image_url":{"url":"data:y"},"type":"image_url"}]`},
		{"another kind of part", `[{"type":"input_audio"},{"type":"file"}]`, Content{NonTextPart: "input_audio", Present: true}, `""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Content
			require.NoError(t, json.Unmarshal([]byte(tc.in), &c))
			assert.Equal(t, tc.want, c)
			out, err := json.Marshal(c)
			require.NoError(t, err)
			assert.JSONEq(t, tc.out, string(out))
		})
	}
	var c Content
	require.Error(t, json.Unmarshal([]byte(`42`), &c), "a number is no content")
}

func TestStopList(t *testing.T) {
	tests := []struct {
		in   string
		want StopList
	}{
		{`"x"`, StopList{"x"}},
		{`["x","y"]`, StopList{"x", "y"}},
		{`null`, nil},
	}
	for _, tc := range tests {
		var s StopList
		require.NoError(t, json.Unmarshal([]byte(tc.in), &s), tc.in)
		assert.Equal(t, tc.want, s, tc.in)
	}
	var s StopList
	require.Error(t, json.Unmarshal([]byte(`{}`), &s))
}

// What npud sends upstream carries only the fields it set.
func TestChatRequestOmitsWhatIsUnset(t *testing.T) {
	b, err := json.Marshal(ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: Content{Text: "hi"}}}, Stream: true,
		StreamOptions: &StreamOptions{IncludeUsage: true}})
	require.NoError(t, err)
	assert.Equal(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, string(b))
}
