package upstream

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// delta is one chunk's data line with one choice's delta.
func delta(t *testing.T, d map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d}}})
	require.NoError(t, err)
	return "data: " + string(b) + "\n\n"
}

func callDelta(t *testing.T, id, name, args string) string {
	t.Helper()
	fn := map[string]any{"arguments": args}
	if name != "" {
		fn["name"] = name
	}
	tc := map[string]any{"index": 0, "function": fn}
	if id != "" {
		tc["id"] = id
	}
	return delta(t, map[string]any{"tool_calls": []any{tc}})
}

// What the relay hands the bridge, and how it ends, for each shape of an
// upstream's stream: structured reasoning and calls in the relayed
// family's text, NUL kept out, max_tokens kept, and each way a stream
// breaks in npud's own words.
func TestRelayHandsTheBridgeWhatTheUpstreamSent(t *testing.T) {
	tools := []npu.Tool{{Name: "get_time"}}
	for _, tc := range []struct {
		name      string
		stream    func(t *testing.T) string
		maxTokens int
		texts     []string
		finish    npu.FinishReason
		err       string
	}{
		{"reasoning then content", func(t *testing.T) string {
			return delta(t, map[string]any{"reasoning_content": "a"}) + delta(t, map[string]any{"reasoning": "b"}) +
				delta(t, map[string]any{"content": "c"}) + "data: [DONE]\n\n"
		}, 0, []string{"<think>a", "b", "</think>c"}, npu.FinishStop, ""},
		{"reasoning cut by [DONE] is closed", func(t *testing.T) string {
			return delta(t, map[string]any{"reasoning_content": "a"}) + "data: [DONE]\n\n"
		}, 0, []string{"<think>a", "</think>"}, npu.FinishStop, ""},
		{"a call in pieces after reasoning", func(t *testing.T) string {
			return delta(t, map[string]any{"reasoning_content": "hm"}) + callDelta(t, "c1", "get_time", `{"tz":`) +
				callDelta(t, "", "", ` "UTC"}`) + "data: [DONE]\n\n"
		}, 0, []string{"<think>hm", "</think>\x00call\x00{\"id\":\"c1\",\"name\":\"get_time\",\"arguments\":\"{\\\"tz\\\": \\\"UTC\\\"}\"}\x00/call\x00"}, npu.FinishStop, ""},
		{"a call to an undeclared tool is dropped", func(t *testing.T) string {
			return callDelta(t, "c1", "rm_rf", `{}`) + delta(t, map[string]any{"content": "ok"}) + "data: [DONE]\n\n"
		}, 0, []string{"ok"}, npu.FinishStop, ""},
		{"a call without arguments gets {}", func(t *testing.T) string {
			return callDelta(t, "c1", "get_time", "") + "data: [DONE]\n\n"
		}, 0, []string{"\x00call\x00{\"id\":\"c1\",\"name\":\"get_time\",\"arguments\":\"{}\"}\x00/call\x00"}, npu.FinishStop, ""},
		{"NUL is kept out", func(t *testing.T) string {
			return delta(t, map[string]any{"content": "a\x00call\x00b"}) + "data: [DONE]\n\n"
		}, 0, []string{"a\uFFFDcall\uFFFDb"}, npu.FinishStop, ""},
		{"finish_reason length", func(t *testing.T) string {
			return delta(t, map[string]any{"content": "a"}) +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n"
		}, 0, []string{"a"}, npu.FinishLength, ""},
		{"past max_tokens is cut off", func(t *testing.T) string {
			return delta(t, map[string]any{"reasoning_content": "a"}) + delta(t, map[string]any{"content": "b"}) +
				delta(t, map[string]any{"content": "c"}) + "data: [DONE]\n\n"
		}, 2, []string{"<think>a", "</think>b"}, npu.FinishLength, ""},
		{"no [DONE]", func(t *testing.T) string {
			return delta(t, map[string]any{"content": "a"})
		}, 0, []string{"a"}, npu.FinishStop, `upstream "far" ended its stream without [DONE]`},
		{"a malformed event", func(t *testing.T) string {
			return delta(t, map[string]any{"content": "a"}) + "data: {oops\n\n"
		}, 0, []string{"a"}, npu.FinishStop, `upstream "far" sent a malformed event: invalid character`},
		{"an error event", func(t *testing.T) string {
			return delta(t, map[string]any{"content": "a"}) + `data: {"error":{"message":"out of memory"}}` + "\n\n"
		}, 0, []string{"a"}, npu.FinishStop, `upstream "far" failed mid-stream (its error is in npud's log)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.stream(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			e, err := New(Config{Name: "far", URL: srv.URL, Models: []string{"m"}}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			t.Cleanup(e.Close)
			var mu sync.Mutex
			var texts []string
			res, err := e.Generate(t.Context(), &npu.Request{Model: "m", Prompt: "x", Tools: tools, MaxTokens: tc.maxTokens},
				func(text string) npu.Status {
					mu.Lock()
					defer mu.Unlock()
					texts = append(texts, text)
					return npu.Running
				})
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.finish, res.FinishReason)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.False(t, strings.Contains(err.Error(), "out of memory"), "the upstream's words go to the log")
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.texts, texts)
		})
	}
}
