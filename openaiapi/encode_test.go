package openaiapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "new\nline\ttab\rcr", "\x00\x01\x1f control", "\b backspace \f formfeed",
		"<script>&amp;</script>", "line\u2028sep\u2029para", "emoji 🙂 and 日本語", "\u007f del",
	} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendJSONString(nil, s)), "%q", s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("hello \"world\"\n")
	f.Add("🙂<>&\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip() // the bridge only ever hands over valid UTF-8
		}
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSONString(nil, s)))
	})
}

func TestChunkEncoderFramesParse(t *testing.T) {
	enc := newChunkEncoder(chatEndpoint, "chatcmpl-x\"y", 1700000000, "m/odel")
	frames := map[string][]byte{
		"role":   append([]byte(nil), enc.role()...),
		"text":   append([]byte(nil), enc.text("hi \"there\"\n")...),
		"finish": append([]byte(nil), enc.finish("length")...),
		"usage":  append([]byte(nil), enc.usage(usage{1, 2, 3})...),
	}
	for name, f := range frames {
		s := string(f)
		require.True(t, strings.HasPrefix(s, "data: ") && strings.HasSuffix(s, "\n\n"), name)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(s, "data: "), "\n\n")), &v), name)
		assert.Equal(t, "chatcmpl-x\"y", v["id"])
		assert.Equal(t, "m/odel", v["model"])
		assert.Equal(t, "chat.completion.chunk", v["object"])
		assert.EqualValues(t, 1700000000, v["created"])
	}
}

// benchChunk is the same content chunk built with encoding/json, to compare.
type benchChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []benchChoice `json:"choices"`
}

type benchChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

const benchToken = " processing"

func BenchmarkSSEChunkEncode(b *testing.B) {
	enc := newChunkEncoder(chatEndpoint, "chatcmpl-0123456789abcdef01234567", 1700000000, "sim")
	b.ReportAllocs()
	for b.Loop() {
		_ = enc.text(benchToken)
	}
}

func BenchmarkSSEChunkJSONMarshal(b *testing.B) {
	c := benchChunk{ID: "chatcmpl-0123456789abcdef01234567", Object: "chat.completion.chunk", Created: 1700000000, Model: "sim"}
	c.Choices = make([]benchChoice, 1)
	b.ReportAllocs()
	for b.Loop() {
		c.Choices[0].Delta.Content = benchToken
		body, _ := json.Marshal(c)
		frame := make([]byte, 0, len(body)+8)
		frame = append(append(append(frame, "data: "...), body...), "\n\n"...)
		_ = frame
	}
}
