package openaiapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/errclass"
)

// frame checks the SSE framing of one encoded event and returns its JSON.
func frame(t *testing.T, b []byte) string {
	t.Helper()
	s := string(b)
	require.True(t, strings.HasPrefix(s, "data: "), "%q", s)
	require.True(t, strings.HasSuffix(s, "\n\n"), "%q", s)
	body := strings.TrimSuffix(strings.TrimPrefix(s, "data: "), "\n\n")
	require.NotContains(t, body, "\n", "one line")
	require.True(t, json.Valid([]byte(body)), "%s", body)
	return body
}

func TestChunkEncoderFrames(t *testing.T) {
	const (
		chatHead   = `"id":"chatcmpl-x\"y","object":"chat.completion.chunk","created":1700000000,"model":"m/odel\u003c1\u003e"`
		legacyHead = `"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"sim"`
	)
	chat := newChunkEncoder(chatEndpoint, `chatcmpl-x"y`, 1700000000, "m/odel<1>")
	legacy := newChunkEncoder(completionsEndpoint, "cmpl-1", 1700000000, "sim")
	tests := []struct {
		name   string
		encode func() []byte
		want   string
	}{
		{"chat role", chat.role,
			`{` + chatHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`},
		{"chat text", func() []byte { return chat.text("", "hi \"there\"\n🙂") },
			`{` + chatHead + `,"choices":[{"index":0,"delta":{"content":"hi \"there\"\n🙂"},"logprobs":null,"finish_reason":null}]}`},
		// Issue 16: reasoning rides in reasoning_content, never in content.
		{"chat reasoning", func() []byte { return chat.text("I think", "") },
			`{` + chatHead + `,"choices":[{"index":0,"delta":{"reasoning_content":"I think"},"logprobs":null,"finish_reason":null}]}`},
		{"chat reasoning and text", func() []byte { return chat.text("so.", "Hi") },
			`{` + chatHead + `,"choices":[{"index":0,"delta":{"reasoning_content":"so.","content":"Hi"},"logprobs":null,"finish_reason":null}]}`},
		{"chat finish stop", func() []byte { return chat.finish("stop") },
			`{` + chatHead + `,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`},
		{"chat finish length", func() []byte { return chat.finish("length") },
			`{` + chatHead + `,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`},
		{"chat usage", func() []byte {
			return chat.usage(openaiwire.Usage{PromptTokens: 3, CompletionTokens: 5, TotalTokens: 8})
		},
			`{` + chatHead + `,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`},
		{"legacy text", func() []byte { return legacy.text("", "a\tb") },
			`{` + legacyHead + `,"choices":[{"index":0,"text":"a\tb","logprobs":null,"finish_reason":null}]}`},
		{"legacy finish", func() []byte { return legacy.finish("length") },
			`{` + legacyHead + `,"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}`},
		{"chat usage with cached tokens", func() []byte {
			return chat.usage(openaiwire.Usage{PromptTokens: 30, CompletionTokens: 5, TotalTokens: 35, PromptDetails: &openaiwire.PromptDetails{CachedTokens: 24}})
		},
			`{` + chatHead + `,"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35,"prompt_tokens_details":{"cached_tokens":24}}}`},
		{"legacy usage", func() []byte {
			return legacy.usage(openaiwire.Usage{PromptTokens: 1, CompletionTokens: 0, TotalTokens: 1})
		},
			`{` + legacyHead + `,"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`},
		{"error", func() []byte {
			return errorFrame(&Error{Type: "server_error", Code: "token_timeout", Base: errclass.Base{Status: 504, Message: "no output for 1s"}})
		}, `{"error":{"message":"no output for 1s","type":"server_error","param":null,"code":"token_timeout"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := frame(t, tc.encode())
			assert.JSONEq(t, tc.want, got)
			assert.Equal(t, tc.want, got, "byte for byte, in OpenAI's field order")
		})
	}
}

// TestChunkEncoderReusesItsBuffer: after the first chunk a content chunk
// costs no allocation, and each call overwrites the last frame, so the
// writer must be done with a frame before the next call.
func TestChunkEncoderReusesItsBuffer(t *testing.T) {
	enc := newChunkEncoder(chatEndpoint, "chatcmpl-0123456789abcdef01234567", 1700000000, "sim")
	first := enc.text("", " a somewhat longer token to grow the buffer")
	allocs := testing.AllocsPerRun(100, func() { _ = enc.text("", " processing") })
	assert.Zero(t, allocs)
	again := enc.text("", "x")
	assert.Equal(t, &first[0], &again[0], "the same buffer")
}

func TestErrorJSONShape(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"all set", &Error{Type: "invalid_request_error", Param: "messages", Code: "invalid_value", Base: errclass.Base{Status: 400,
			Message: "m"}},
			`{"error":{"message":"m","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`},
		{"param and code null", &Error{Type: "server_error", Base: errclass.Base{Status: 500, Message: "boom <b>"}},
			`{"error":{"message":"boom <b>","type":"server_error","param":null,"code":null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.err)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
			assert.NotContains(t, string(b), "Status", "the status is not part of the body")
		})
	}
}
