package openaiapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// wireFixture is a real server and a raw client that asks for no
// compression, for byte-level checks.
type wireFixture struct {
	*daemontest.Client
	srv *daemontest.Server
}

func newWireFixture(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *wireFixture {
	t.Helper()
	srv := daemontest.StartEngine(t, mutate, faults)
	return &wireFixture{Client: daemontest.NewClient(t, srv.URL), srv: srv}
}

// post sends body and returns the response with its whole body, read
// and closed (daemontest.Client.Do).
//
//bodyclose:handled
func (f *wireFixture) post(t *testing.T, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return f.Do(t, http.MethodPost, path, body, header...)
}

func (f *wireFixture) active(t *testing.T) float64 { return activeStreams(t, f.HTTP, f.URL) }

// sseEvent is one event of a stream: a data payload or a comment.
type sseEvent struct {
	data    string
	comment bool
}

// splitEvents checks the framing rules and splits a raw stream into events:
// every event is one `data: ` line (with the space) or the comment
// `: ping`, each followed by a blank line; the last is exactly
// `data: [DONE]\n\n` with nothing after it.
func splitEvents(t *testing.T, raw []byte) []sseEvent {
	t.Helper()
	require.True(t, bytes.HasSuffix(raw, []byte("\n\ndata: [DONE]\n\n")),
		"the stream ends with exactly data: [DONE] and nothing after it; got tail %q", raw[max(0, len(raw)-80):])
	var events []sseEvent
	for _, block := range strings.SplitAfter(string(raw), "\n\n") {
		if block == "" {
			continue
		}
		require.True(t, strings.HasSuffix(block, "\n\n"), "event %q is not terminated by a blank line", block)
		line := strings.TrimSuffix(block, "\n\n")
		require.NotContains(t, line, "\n", "an event is exactly one line")
		require.NotContains(t, line, "\r")
		switch {
		case strings.HasPrefix(line, "data: "):
			events = append(events, sseEvent{data: strings.TrimPrefix(line, "data: ")})
		case line == ": ping":
			events = append(events, sseEvent{comment: true})
		default:
			t.Fatalf("line %q is neither `data: <json>` nor `: ping` (no event:, id: or retry: lines)", line)
		}
	}
	return events
}

// streamSummary is what checkStream learned from a stream.
type streamSummary struct {
	// kinds is the order of events: r role, t text, p ping, f finish,
	// u usage, e error, d [DONE].
	kinds      string
	text       string
	pieces     []string
	finish     string
	usage      *wireUsage
	id         string
	created    int64
	errorEvent *wireError
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type wireError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// code is the error's code, "" when null.
func (e wireError) code() string {
	if e.Code == nil {
		return ""
	}
	return *e.Code
}

func rawFields(t *testing.T, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &m), "%s", data)
	return m
}

// checkStream checks every ordering and shape rule of an OpenAI stream for
// chat (object "chat.completion.chunk") or legacy completions (object
// "text_completion") and returns what it carried.
func checkStream(t *testing.T, raw []byte, object string) streamSummary {
	t.Helper()
	chat := object == "chat.completion.chunk"
	events := splitEvents(t, raw)
	var s streamSummary
	var model string
	for i, ev := range events {
		switch {
		case ev.comment:
			s.kinds += "p"
			continue
		case ev.data == "[DONE]":
			require.Equal(t, len(events)-1, i, "[DONE] is the last event")
			s.kinds += "d"
			continue
		}
		top := rawFields(t, []byte(ev.data))
		if errRaw, ok := top["error"]; ok {
			require.Len(t, top, 1, "an error event is {\"error\":{...}} only: %s", ev.data)
			fields := rawFields(t, errRaw)
			for _, k := range []string{"message", "type", "param", "code"} {
				assert.Contains(t, fields, k, "error events carry %s", k)
			}
			s.errorEvent = new(wireError)
			require.NoError(t, json.Unmarshal(errRaw, s.errorEvent))
			require.Equal(t, len(events)-2, i, "an error event is followed only by [DONE]")
			s.kinds += "e"
			continue
		}
		var head struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			Model   string `json:"model"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &head))
		assert.Equal(t, object, head.Object)
		if s.id == "" {
			s.id, s.created, model = head.ID, head.Created, head.Model
			require.NotEmpty(t, s.id)
		}
		assert.Equal(t, s.id, head.ID, "same id on every chunk")
		assert.Equal(t, s.created, head.Created, "same created on every chunk")
		assert.Equal(t, model, head.Model, "same model on every chunk")

		if usageRaw, ok := top["usage"]; ok {
			assert.Equal(t, "[]", string(top["choices"]), "the usage chunk has choices: []")
			require.NotContains(t, s.kinds, "u", "one usage chunk")
			s.usage = new(wireUsage)
			require.NoError(t, json.Unmarshal(usageRaw, s.usage))
			s.kinds += "u"
			continue
		}
		var choices []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(top["choices"], &choices))
		require.Len(t, choices, 1, "%s", ev.data)
		ch := choices[0]
		assert.Equal(t, "0", string(ch["index"]))
		finishRaw, ok := ch["finish_reason"]
		require.True(t, ok, "every choice has finish_reason, null until the end: %s", ev.data)

		var piece string
		if chat {
			deltaRaw, ok := ch["delta"]
			require.True(t, ok, "chat chunks carry a delta: %s", ev.data)
			if s.kinds == "" || strings.Trim(s.kinds, "p") == "" {
				assert.Equal(t, `{"role":"assistant","content":""}`, string(deltaRaw), "the first chunk")
				assert.Equal(t, "null", string(finishRaw))
				s.kinds += "r"
				continue
			}
			delta := rawFields(t, deltaRaw)
			assert.NotContains(t, delta, "role", "the role appears once")
			if c, ok := delta["content"]; ok {
				require.NoError(t, json.Unmarshal(c, &piece))
			}
		} else {
			textRaw, ok := ch["text"]
			require.True(t, ok, "completion chunks carry text: %s", ev.data)
			require.NoError(t, json.Unmarshal(textRaw, &piece))
		}
		if string(finishRaw) != "null" {
			require.NoError(t, json.Unmarshal(finishRaw, &s.finish))
			assert.Empty(t, piece, "the finish chunk carries no text")
			s.kinds += "f"
			continue
		}
		assert.NotEmpty(t, piece, "a content chunk has content")
		s.pieces = append(s.pieces, piece)
		s.text += piece
		s.kinds += "t"
	}

	// The order: [role] (text|ping)* then finish [usage], or an error; then [DONE].
	shape := strings.ReplaceAll(s.kinds, "p", "")
	if chat {
		require.True(t, strings.HasPrefix(shape, "r"), "chat streams open with the role chunk: %s", s.kinds)
		shape = shape[1:]
	}
	body := strings.TrimLeft(shape, "t")
	assert.Contains(t, []string{"fd", "fud", "ed"}, body, "after the text: one finish chunk [and usage], or an error; then [DONE] (events %s)", s.kinds)
	return s
}
