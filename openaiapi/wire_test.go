package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// wireFixture is a real server and a raw client, for byte-level checks.
type wireFixture struct {
	*daemontest.Client
	url string
	hc  *http.Client
}

func newWireFixture(t *testing.T, mutate func(*daemon.Config), faults func(*npu.Request) sim.Fault) *wireFixture {
	t.Helper()
	c := daemontest.NewClient(t, daemontest.StartSim(t, mutate, faults).URL)
	return &wireFixture{Client: c, url: c.URL, hc: c.HTTP}
}

// post sends body and returns the response with its whole body.
func (f *wireFixture) post(t *testing.T, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return f.Do(t, http.MethodPost, path, body, header...)
}

// sseEvent is one event of a stream: a data payload or a comment.
type sseEvent struct {
	data    string
	comment bool
}

// splitEvents checks the framing rules and splits a raw stream into events:
// every event is one `data: ` line (with the space) or a `:` comment, each
// followed by a blank line; nothing else.
func splitEvents(t *testing.T, raw []byte) []sseEvent {
	t.Helper()
	require.True(t, bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")), "the stream ends with exactly data: [DONE] and nothing after it; got tail %q", tail(raw))
	var events []sseEvent
	for _, block := range strings.SplitAfter(string(raw), "\n\n") {
		if block == "" {
			continue
		}
		require.True(t, strings.HasSuffix(block, "\n\n"), "event %q is not terminated by a blank line", block)
		line := strings.TrimSuffix(block, "\n\n")
		require.NotContains(t, line, "\n", "an event is exactly one line")
		switch {
		case strings.HasPrefix(line, "data: "):
			events = append(events, sseEvent{data: strings.TrimPrefix(line, "data: ")})
		case strings.HasPrefix(line, ":"):
			events = append(events, sseEvent{comment: true})
		default:
			t.Fatalf("line %q is neither `data: ` nor a comment (no event:, id: or retry: lines)", line)
		}
	}
	return events
}

func tail(b []byte) []byte { return b[max(0, len(b)-80):] }

// chunk is the union of the chunk shapes, decoded loosely to check them.
type chunk struct {
	raw     map[string]json.RawMessage
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func decodeChunk(t *testing.T, data string) chunk {
	t.Helper()
	var c chunk
	require.NoError(t, json.Unmarshal([]byte(data), &c), "chunk %s", data)
	require.NoError(t, json.Unmarshal([]byte(data), &c.raw))
	return c
}

// streamSummary decodes a whole chat stream and checks the order rules.
type streamSummary struct {
	text       string
	pieces     []string
	finish     string
	usage      *chunk
	heartbeats int
	errorEvent map[string]any
}

func checkChatStream(t *testing.T, raw []byte, object string) streamSummary {
	t.Helper()
	events := splitEvents(t, raw)
	var s streamSummary
	var first *chunk
	roles, finishes := 0, 0
	for i, ev := range events {
		if ev.comment {
			s.heartbeats++
			continue
		}
		if ev.data == "[DONE]" {
			require.Equal(t, len(events)-1, i, "[DONE] is the last event")
			continue
		}
		if strings.HasPrefix(ev.data, `{"error"`) {
			require.NoError(t, json.Unmarshal([]byte(ev.data), &s.errorEvent))
			require.Equal(t, len(events)-2, i, "an error event is followed only by [DONE]")
			continue
		}
		c := decodeChunk(t, ev.data)
		assert.NotContains(t, c.raw, "error", "normal chunks never carry an error key")
		assert.Equal(t, object, c.Object)
		if first == nil {
			first = &c
			if object == "chat.completion.chunk" {
				require.Len(t, c.Choices, 1)
				require.NotNil(t, c.Choices[0].Delta)
				require.NotNil(t, c.Choices[0].Delta.Role, "the first chunk carries the role")
				assert.Equal(t, "assistant", *c.Choices[0].Delta.Role)
				require.NotNil(t, c.Choices[0].Delta.Content)
				assert.Equal(t, "", *c.Choices[0].Delta.Content)
			}
		}
		assert.Equal(t, first.ID, c.ID, "same id on every chunk")
		assert.Equal(t, first.Created, c.Created, "same created on every chunk")
		assert.Equal(t, first.Model, c.Model, "same model on every chunk")
		if c.Usage != nil {
			assert.Empty(t, c.Choices, "the usage chunk has choices: []")
			assert.Equal(t, "[]", string(c.raw["choices"]))
			require.Nil(t, s.usage, "one usage chunk")
			s.usage = &c
			continue
		}
		require.Nil(t, s.usage, "the usage chunk comes last")
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		if ch.Delta != nil && ch.Delta.Role != nil {
			roles++
		}
		if ch.FinishReason != nil {
			finishes++
			s.finish = *ch.FinishReason
			continue
		}
		require.Zero(t, finishes, "no content after the finish chunk")
		piece := ""
		if ch.Delta != nil && ch.Delta.Content != nil {
			piece = *ch.Delta.Content
		}
		if ch.Text != nil {
			piece = *ch.Text
		}
		if piece != "" {
			s.pieces = append(s.pieces, piece)
			s.text += piece
		}
	}
	if object == "chat.completion.chunk" {
		assert.Equal(t, 1, roles, "the role appears once")
	}
	if s.errorEvent == nil {
		assert.Equal(t, 1, finishes, "exactly one chunk has a finish_reason")
	} else {
		assert.Zero(t, finishes, "a failed stream has no finish chunk")
	}
	return s
}

const chatBody = `{"model":"sim","seed":9,"stream":true,"messages":[{"role":"user","content":"wire"}]%s}`

func withFields(extra string) string {
	if extra == "" {
		return strings.Replace(chatBody, "%s", "", 1)
	}
	return strings.Replace(chatBody, "%s", ","+extra, 1)
}

func TestWireStreamHeadersAndFraming(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	want := sim.Tokens(9, userPrompt("wire"))
	tests := []struct {
		name      string
		extra     string
		wantUsage bool
		wantN     int
		reason    string
	}{
		{"plain", "", false, len(want), "stop"},
		{"max_tokens", `"max_tokens":4`, false, 4, "length"},
		{"include_usage", `"max_tokens":4,"stream_options":{"include_usage":true}`, true, 4, "length"},
		{"empty stream_options emits no usage", `"max_tokens":4,"stream_options":{}`, false, 4, "length"},
		{"include_usage false", `"max_tokens":4,"stream_options":{"include_usage":false}`, false, 4, "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, "/v1/chat/completions", withFields(tc.extra))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
			assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
			assert.Contains(t, []string{"", "identity"}, resp.Header.Get("Content-Encoding"))
			s := checkChatStream(t, raw, "chat.completion.chunk")
			assert.Equal(t, strings.Join(want[:tc.wantN], ""), s.text)
			assert.Equal(t, tc.reason, s.finish)
			if tc.wantUsage {
				require.NotNil(t, s.usage)
				assert.Equal(t, sim.CountTokens(userPrompt("wire")), s.usage.Usage.PromptTokens)
				assert.Equal(t, tc.wantN, s.usage.Usage.CompletionTokens)
				assert.Equal(t, s.usage.Usage.PromptTokens+tc.wantN, s.usage.Usage.TotalTokens)
			} else {
				assert.Nil(t, s.usage)
			}
		})
	}
}

func TestWireLegacyCompletionsStream(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	resp, raw := f.post(t, "/v1/completions", `{"model":"sim","prompt":"abc","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	s := checkChatStream(t, raw, "text_completion")
	assert.Equal(t, strings.Join(sim.Tokens(0, "abc")[:3], ""), s.text)
	require.NotNil(t, s.usage)
	first := decodeChunk(t, splitEvents(t, raw)[0].data)
	assert.True(t, strings.HasPrefix(first.ID, "cmpl-"))
}

func TestWireRequestIDIsEchoedAndIsTheCompletionID(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	resp, raw := f.post(t, "/v1/chat/completions", withFields(`"max_tokens":2`), "X-Request-ID", "client-id-42")
	assert.Equal(t, "client-id-42", resp.Header.Get("X-Request-ID"))
	first := decodeChunk(t, splitEvents(t, raw)[0].data)
	assert.Equal(t, "chatcmpl-client-id-42", first.ID)

	resp, raw = f.post(t, "/v1/chat/completions", withFields(`"max_tokens":2`))
	generated := resp.Header.Get("X-Request-ID")
	require.NotEmpty(t, generated)
	first = decodeChunk(t, splitEvents(t, raw)[0].data)
	assert.Equal(t, "chatcmpl-"+generated, first.ID)
}

func TestWireInBandErrorThenDone(t *testing.T) {
	f := newWireFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 4} })
	resp, raw := f.post(t, "/v1/chat/completions", withFields(""))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := checkChatStream(t, raw, "chat.completion.chunk")
	require.NotNil(t, s.errorEvent, "the failure is an in-band error event")
	e := s.errorEvent["error"].(map[string]any)
	assert.Contains(t, e, "message")
	assert.Contains(t, e, "type")
	assert.Contains(t, e, "param")
	assert.Equal(t, "engine_error", e["code"])
	assert.Equal(t, strings.Join(sim.Tokens(9, userPrompt("wire"))[:3], ""), s.text, "text before the failure is kept")
}

func TestWireSplitMultibyteCharacters(t *testing.T) {
	f := newWireFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{SplitRunes: true} })
	// Find a seed whose text has 2-, 3- and 4-byte characters.
	seed := -1
	for s := range 200 {
		text := sim.Text(int64(s), userPrompt("utf8"))
		if strings.Contains(text, "🙂") || strings.Contains(text, "🚀") {
			if strings.ContainsAny(text, "éïüñ") && strings.ContainsAny(text, "日本語データ") {
				seed = s
				break
			}
		}
	}
	require.GreaterOrEqual(t, seed, 0, "no seed gives all character widths")
	body := strings.Replace(`{"model":"sim","seed":SEED,"stream":true,"messages":[{"role":"user","content":"utf8"}]}`, "SEED", itoa(seed), 1)
	_, raw := f.post(t, "/v1/chat/completions", body)
	s := checkChatStream(t, raw, "chat.completion.chunk")
	for _, p := range s.pieces {
		assert.True(t, utf8.ValidString(p), "chunk %q is not whole UTF-8", p)
		assert.NotContains(t, p, "\uFFFD")
	}
	assert.Equal(t, sim.Text(int64(seed), userPrompt("utf8")), s.text)
}

// spanningStop returns a stop string made of the last two characters of
// tokens[i-1] and the first two of tokens[i], so that it spans two engine
// callbacks.
func spanningStop(tokens []string, i int) string {
	before, after := []rune(strings.Join(tokens[:i], "")), []rune(tokens[i])
	return string(before[len(before)-2:]) + string(after[:min(2, len(after))])
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestWireStopStringSpanningChunks(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	tokens := sim.Tokens(9, userPrompt("wire"))
	full := strings.Join(tokens, "")
	// The stop string is the end of token 6 and the start of token 7.
	stop := spanningStop(tokens, 6)
	stopJSON, _ := json.Marshal(stop)
	_, raw := f.post(t, "/v1/chat/completions", withFields(`"stop":`+string(stopJSON)))
	s := checkChatStream(t, raw, "chat.completion.chunk")
	assert.Equal(t, full[:strings.Index(full, stop)], s.text)
	assert.Equal(t, "stop", s.finish)
	// No piece of the stop string was ever sent: the text ends right before it.
	assert.NotContains(t, s.text, stop)
}

func TestWireHeartbeatsCommitWhileQueued(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.Heartbeat = 30 * time.Millisecond },
		func(r *npu.Request) sim.Fault {
			if r.Messages[0].Content == "hog" {
				return sim.Fault{StallAtToken: 2, StallFor: 400 * time.Millisecond}
			}
			return sim.Fault{}
		})
	hogDone := make(chan []byte)
	go func() {
		_, raw := f.post(t, "/v1/chat/completions", `{"model":"sim","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hog"}]}`)
		hogDone <- raw
	}()
	waitFor(t, func() bool { return activeStreams(t, f.hc, f.url) == 1 })

	// The second request waits behind the stalled one; its headers and
	// keep-alive comments must arrive while it waits.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions",
		strings.NewReader(withFields(`"max_tokens":2`)))
	start := time.Now()
	resp, err := f.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	headersAfter := time.Since(start)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	total := time.Since(start)

	s := checkChatStream(t, raw, "chat.completion.chunk")
	assert.GreaterOrEqual(t, s.heartbeats, 2, "keep-alive comments while queued")
	assert.Contains(t, string(raw), ": ping\n\n")
	assert.Less(t, headersAfter, total, "headers came before the answer")
	assert.Equal(t, "length", s.finish)
	hogRaw := <-hogDone
	checkChatStream(t, hogRaw, "chat.completion.chunk")
}

func TestWireTokenTimeoutIsAnInBandError(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.TokenTimeout = 100 * time.Millisecond },
		func(*npu.Request) sim.Fault { return sim.Fault{StallAtToken: 3} })
	_, raw := f.post(t, "/v1/chat/completions", withFields(""))
	s := checkChatStream(t, raw, "chat.completion.chunk")
	require.NotNil(t, s.errorEvent)
	assert.Equal(t, "token_timeout", s.errorEvent["error"].(map[string]any)["code"])
	assert.Equal(t, strings.Join(sim.Tokens(9, userPrompt("wire"))[:2], ""), s.text)
	waitFor(t, func() bool { return activeStreams(t, f.hc, f.url) == 0 })
}

func TestWireDeadlineFinishesWithLength(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.SimITL = 20 * time.Millisecond }, nil)
	natural := len(sim.Tokens(9, userPrompt("wire")))
	_, raw := f.post(t, "/v1/chat/completions", withFields(`"timeout_ms":150,"stream_options":{"include_usage":true}`))
	s := checkChatStream(t, raw, "chat.completion.chunk")
	assert.Equal(t, "length", s.finish)
	require.NotNil(t, s.usage)
	assert.Less(t, s.usage.Usage.CompletionTokens, natural, "the deadline cut the answer short")
	assert.True(t, strings.HasPrefix(sim.Text(9, userPrompt("wire")), s.text), "what was sent is a prefix of the answer")
}

func TestWireBadInput(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.MaxBodyBytes = 4096 }, nil)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		param  string
		code   string
		msgHas string
	}{
		{"invalid JSON", "/v1/chat/completions", `{"model":"sim",`, 400, "", "invalid_json", "unexpected end of JSON input"},
		{"body over the limit", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"user":"` + strings.Repeat("u", 5000) + `"}`, 413, "", "request_too_large", "4096"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9",` + msgs + `}`, 404, "model", "model_not_found", "gpt-9"},
		{"missing model", "/v1/chat/completions", `{` + msgs + `}`, 400, "model", "missing_required_parameter", "model"},
		{"empty messages", "/v1/chat/completions", `{"model":"sim","messages":[]}`, 400, "messages", "invalid_value", "at least one"},
		{"max_tokens as string", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"max_tokens":"5"}`, 400, "max_tokens", "invalid_type", "max_tokens"},
		{"messages as object", "/v1/chat/completions", `{"model":"sim","messages":{"role":"user"}}`, 400, "messages", "invalid_type", "messages"},
		{"stop as number", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"stop":5}`, 400, "stop", "invalid_type", "stop"},
		{"content as number", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":5}]}`, 400, "messages.content", "invalid_type", "content"},
		{"max_tokens 0", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"max_tokens":0}`, 400, "max_tokens", "invalid_value", "at least 1"},
		{"max_tokens -1", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"max_tokens":-1}`, 400, "max_tokens", "invalid_value", "at least 1"},
		{"max_completion_tokens 0", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"max_completion_tokens":0}`, 400, "max_completion_tokens", "invalid_value", "at least 1"},
		{"temperature below 0", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"temperature":-0.1}`, 400, "temperature", "invalid_value", "between 0 and 2"},
		{"temperature above 2", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"temperature":2.5}`, 400, "temperature", "invalid_value", "between 0 and 2"},
		{"top_p 0", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"top_p":0}`, 400, "top_p", "invalid_value", "top_p"},
		{"invalid UTF-8", "/v1/chat/completions", "{\"model\":\"sim\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe\"}]}", 400, "", "invalid_utf8", "UTF-8"},
		{"stream_options without stream", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"stream_options":{"include_usage":true}}`, 400, "stream_options", "invalid_value", "stream"},
		{"n = 2", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"n":2}`, 400, "n", "unsupported_value", "'n' must be 1"},
		{"tools", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools", "unsupported_parameter", "tool"},
		{"image part", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content", "unsupported_content", "image_url"},
		{"tool role", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"tool","content":"x"}]}`, 400, "messages[0].role", "unsupported_value", "tool"},
		{"timeout_ms 0", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"timeout_ms":0}`, 400, "timeout_ms", "invalid_value", "timeout_ms"},
		{"empty stop string", "/v1/chat/completions", `{"model":"sim",` + msgs + `,"stop":["a",""]}`, 400, "stop", "invalid_value", "empty"},
		{"prompt missing", "/v1/completions", `{"model":"sim"}`, 400, "prompt", "missing_required_parameter", "prompt"},
		{"token prompt", "/v1/completions", `{"model":"sim","prompt":[1,2,3]}`, 400, "prompt", "invalid_type", "token"},
		{"two prompts", "/v1/completions", `{"model":"sim","prompt":["a","b"]}`, 400, "prompt", "unsupported_value", "2 prompts"},
		{"context too long", "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":40000}`, 400, "messages", "context_length_exceeded", "context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			e := decodeError(t, raw)
			assert.Equal(t, tc.code, e.Code)
			if tc.param == "" {
				assert.Nil(t, e.Param)
			} else if assert.NotNil(t, e.Param) {
				assert.Equal(t, tc.param, *e.Param)
			}
			assert.Contains(t, e.Message, tc.msgHas)
			assert.NotEmpty(t, e.Type)
		})
	}
}

type wireError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func decodeError(t *testing.T, raw []byte) wireError {
	t.Helper()
	var body struct {
		Error *wireError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
	require.NotNil(t, body.Error, "%s", raw)
	return *body.Error
}

func TestWireUnknownFieldsAreIgnored(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	resp, raw := f.post(t, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"metadata":{"a":1},"store":false,"frobnicate":[1,2]}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
}

func TestWireRouteErrors(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	resp, err := f.hc.Get(f.url + "/v1/chat/completions")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "method_not_allowed", decodeError(t, raw).Code)

	resp, err = f.hc.Get(f.url + "/v1/nothing-here")
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "not_found", decodeError(t, raw).Code)
}

func TestWireWholeResponseShape(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	resp, raw := f.post(t, "/v1/chat/completions", `{"model":"sim","seed":9,"max_tokens":3,"messages":[{"role":"user","content":"wire"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.Unmarshal(raw, &body))
	assert.Equal(t, "chat.completion", body["object"])
	assert.NotContains(t, body, "error")
	choice := body["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, "length", choice["finish_reason"])
	assert.Equal(t, map[string]any{"role": "assistant", "content": strings.Join(sim.Tokens(9, userPrompt("wire"))[:3], "")}, choice["message"])
	usage := body["usage"].(map[string]any)
	assert.EqualValues(t, 3, usage["completion_tokens"])
}
