package openaiapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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

// chatBody is a streamed chat request for [{user, "hi"}] with seed 9, plus
// extra fields (JSON members without braces; may be empty).
func chatBody(extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"model":"sim","seed":9,"stream":true,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

// chatWhole is chatBody without streaming.
func chatWhole(extra string) string { return chatMaybeStream(false, extra) }

func chatMaybeStream(stream bool, extra string) string {
	return strings.Replace(chatBody(extra), `"stream":true`, `"stream":`+strconv.FormatBool(stream), 1)
}

const hiPrompt = "user: hi\n"

func TestWireStreamHeadersAndFraming(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWireFixture(t, nil, nil)
	natural := len(sim.Tokens(9, hiPrompt))
	tests := []struct {
		name      string
		extra     string
		header    []string
		wantN     int
		reason    string
		wantUsage bool
	}{
		{"plain", "", nil, natural, "stop", false},
		{"max_tokens", `"max_tokens":4`, nil, 4, "length", false},
		{"include_usage", `"max_tokens":4,"stream_options":{"include_usage":true}`, nil, 4, "length", true},
		{"stream_options {} emits no usage", `"max_tokens":4,"stream_options":{}`, nil, 4, "length", false},
		{"include_usage false", `"max_tokens":4,"stream_options":{"include_usage":false}`, nil, 4, "length", false},
		{"client accepts gzip: still not compressed", `"max_tokens":4`, []string{"Accept-Encoding", "gzip, deflate, br"}, 4, "length", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, "/v1/chat/completions", chatBody(tc.extra), tc.header...)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
			assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
			// streamwriter sends an explicit "identity" so proxies do not
			// compress; anything else would be a compressed stream.
			assert.Contains(t, []string{"", "identity"}, resp.Header.Get("Content-Encoding"))
			assert.Equal(t, []string{"chunked"}, resp.TransferEncoding, "streamed, not buffered with a length")
			assert.True(t, strings.HasPrefix(string(raw), `data: {"id":"chatcmpl-`), "plain SSE bytes: %q", raw[:min(40, len(raw))])

			s := checkStream(t, raw, "chat.completion.chunk")
			assert.Equal(t, prefix(9, hiPrompt, tc.wantN), s.text)
			assert.Equal(t, tc.reason, s.finish)
			assert.NotContains(t, s.kinds, "p", "no heartbeats at the default interval")
			if !tc.wantUsage {
				assert.Nil(t, s.usage)
				assert.NotContains(t, string(raw), `"usage"`)
				return
			}
			require.NotNil(t, s.usage)
			assert.Equal(t, sim.CountTokens(hiPrompt), s.usage.PromptTokens)
			assert.Equal(t, tc.wantN, s.usage.CompletionTokens)
			assert.Equal(t, s.usage.PromptTokens+tc.wantN, s.usage.TotalTokens)
		})
	}
}

func TestWireLegacyCompletionsStream(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWireFixture(t, nil, nil)
	tests := []struct {
		name      string
		body      string
		wantN     int
		reason    string
		wantUsage bool
	}{
		{"max_tokens and usage", `{"model":"sim","prompt":"abc","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`, 3, "length", true},
		{"natural end", `{"model":"sim","prompt":["abc"],"stream":true}`, 0, "stop", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, "/v1/completions", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			s := checkStream(t, raw, "text_completion")
			assert.NotContains(t, string(raw), `"delta"`, "legacy chunks carry text, not a delta")
			assert.NotContains(t, string(raw), `"role"`)
			assert.True(t, strings.HasPrefix(s.id, "cmpl-"), s.id)
			assert.Equal(t, prefix(0, "abc", tc.wantN), s.text)
			assert.Equal(t, tc.reason, s.finish)
			if tc.wantUsage {
				require.NotNil(t, s.usage)
				assert.Equal(t, sim.CountTokens("abc"), s.usage.PromptTokens)
				assert.Equal(t, tc.wantN, s.usage.CompletionTokens)
			} else {
				assert.Nil(t, s.usage)
			}
		})
	}
}

// TestWireDoneThenEOF: the response ends right after [DONE]; a client that
// reads to EOF (openai-go, old openai-node) does not wait.
func TestWireDoneThenEOF(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		t.Run(path, func(t *testing.T) {
			body := chatBody(`"max_tokens":3`)
			if path == "/v1/completions" {
				body = `{"model":"sim","prompt":"hi","max_tokens":3,"stream":true}`
			}
			resp, err := daemontest.Post(t.Context(), f.HTTP, f.URL+path, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			for {
				line, err := r.ReadString('\n')
				require.NoError(t, err, "the stream ended before [DONE]")
				if line == "data: [DONE]\n" {
					break
				}
			}
			blank, err := r.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "\n", blank)

			rest := make(chan error, 1)
			go func() {
				b, err := io.ReadAll(r)
				if err == nil && len(b) > 0 {
					err = io.ErrUnexpectedEOF
				}
				rest <- err
			}()
			select {
			case err := <-rest:
				require.NoError(t, err, "nothing follows [DONE] and the body ends")
			case <-time.After(5 * time.Second):
				_ = resp.Body.Close() // unblocks the reader
				<-rest
				t.Fatal("the response stays open after [DONE]")
			}
		})
	}
}

func TestWireRequestIDIsEchoedAndIsTheCompletionID(t *testing.T) {
	f := newWireFixture(t, nil, nil)
	tests := []struct {
		name, path, body, idPrefix string
		sent                       string // "" sends none
	}{
		{"chat stream", "/v1/chat/completions", chatBody(`"max_tokens":2`), "chatcmpl-", "client-id-42"},
		{"chat whole", "/v1/chat/completions", `{"model":"sim","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, "chatcmpl-", "whole.id:7"},
		{"legacy stream", "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":2,"stream":true}`, "cmpl-", "legacy-1"},
		{"legacy whole", "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":2}`, "cmpl-", "legacy-2"},
		{"generated", "/v1/chat/completions", chatBody(`"max_tokens":2`), "chatcmpl-", ""},
		{"unsafe id is replaced", "/v1/chat/completions", chatBody(`"max_tokens":2`), "chatcmpl-", `bad"id`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.sent != "" {
				header = []string{"X-Request-ID", tc.sent}
			}
			resp, raw := f.post(t, tc.path, tc.body, header...)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			echoed := resp.Header.Get("X-Request-ID")
			switch tc.sent {
			case "", `bad"id`:
				assert.Regexp(t, `^[0-9a-f]{24}$`, echoed)
			default:
				assert.Equal(t, tc.sent, echoed)
			}
			var id string
			if strings.HasPrefix(string(raw), "data: ") {
				object := "chat.completion.chunk"
				if tc.idPrefix == "cmpl-" {
					object = "text_completion"
				}
				id = checkStream(t, raw, object).id
			} else {
				var whole struct{ ID string }
				require.NoError(t, json.Unmarshal(raw, &whole))
				id = whole.ID
			}
			assert.Equal(t, tc.idPrefix+echoed, id)
		})
	}
}

func TestWireInBandErrorThenDone(t *testing.T) {
	f := newWireFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{ErrorAtToken: 4} })
	tests := []struct{ name, path, body, object, prompt string }{
		{"chat", "/v1/chat/completions", chatBody(""), "chat.completion.chunk", hiPrompt},
		{"legacy", "/v1/completions", `{"model":"sim","seed":9,"prompt":"hi","stream":true,"stream_options":{"include_usage":true}}`, "text_completion", "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			s := checkStream(t, raw, tc.object)
			require.NotNil(t, s.errorEvent, "the failure is an in-band error event: %s", raw)
			assert.Equal(t, "engine_error", s.errorEvent.code())
			assert.Equal(t, "server_error", s.errorEvent.Type)
			assert.Nil(t, s.errorEvent.Param)
			assert.Contains(t, s.errorEvent.Message, "simulated fault at token 4")
			assert.Empty(t, s.finish, "a failed stream has no finish chunk")
			assert.Nil(t, s.usage, "nor usage")
			assert.Equal(t, prefix(9, tc.prompt, 3), s.text, "text before the failure is kept")
		})
	}
}

// TestWireSplitMultibyteCharacters: characters the engine delivers split
// across two callbacks reach the client whole.
func TestWireSplitMultibyteCharacters(t *testing.T) {
	f := newWireFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{SplitRunes: true} })
	// A seed whose answer has 2-, 3- and 4-byte characters.
	seed := -1
	for s := range 500 {
		text := sim.Text(int64(s), hiPrompt)
		if strings.ContainsAny(text, "🙂🚀") && strings.ContainsAny(text, "éïüñ") && strings.ContainsAny(text, "日本語データ") {
			seed = s
			break
		}
	}
	require.GreaterOrEqual(t, seed, 0, "no seed gives all character widths")
	want := sim.Text(int64(seed), hiPrompt)
	chat := `{"model":"sim","seed":` + strconv.Itoa(seed) + `,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

	tests := []struct{ name, path, body, object string }{
		{"chat stream", "/v1/chat/completions", chat, "chat.completion.chunk"},
		{"legacy stream", "/v1/completions", `{"model":"sim","seed":` + strconv.Itoa(seed) + `,"stream":true,"prompt":"user: hi\n"}`, "text_completion"},
		{"chat whole", "/v1/chat/completions", strings.Replace(chat, `"stream":true`, `"stream":false`, 1), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.True(t, utf8.Valid(raw), "the body is valid UTF-8")
			var text string
			if tc.object == "" {
				var whole struct {
					Choices []struct{ Message struct{ Content string } }
				}
				require.NoError(t, json.Unmarshal(raw, &whole))
				text = whole.Choices[0].Message.Content
			} else {
				s := checkStream(t, raw, tc.object)
				for _, p := range s.pieces {
					assert.True(t, utf8.ValidString(p), "chunk %q is not whole UTF-8", p)
				}
				text = s.text
			}
			assert.NotContains(t, text, "\uFFFD")
			assert.Equal(t, want, text)
		})
	}
}

// spanningStop returns a stop string made of the last two characters of
// tokens[:i] and the first two of tokens[i], so that it spans two engine
// callbacks.
func spanningStop(tokens []string, i int) string {
	before, after := []rune(strings.Join(tokens[:i], "")), []rune(tokens[i])
	return string(before[len(before)-2:]) + string(after[:min(2, len(after))])
}

// TestWireStopStrings: the output ends right before the earliest stop
// string, no part of it is ever sent, and text held back because it might
// start one is released when it does not. Characters arrive split across
// callbacks, so matching must work on whole characters.
func TestWireStopStrings(t *testing.T) {
	f := newWireFixture(t, nil, func(*npu.Request) sim.Fault { return sim.Fault{SplitRunes: true} })
	// A seed whose answer has 🙂 or 🚀 after the fourth token.
	seed, emoji := int64(-1), ""
	for s := range int64(500) {
		tokens := sim.Tokens(s, hiPrompt)
		rest := strings.Join(tokens[4:], "")
		for _, e := range []string{"🙂", "🚀"} {
			if strings.Contains(rest, " "+e) && !strings.Contains(strings.Join(tokens[:4], ""), e) {
				seed, emoji = s, e
			}
		}
		if seed >= 0 {
			break
		}
	}
	require.GreaterOrEqual(t, seed, int64(0))
	tokens := sim.Tokens(seed, hiPrompt)
	full := strings.Join(tokens, "")
	// A stop string whose beginning is the fourth token but which never
	// occurs as a whole (§ is not in the simulated vocabulary).
	falseStart := tokens[3] + "§"

	tests := []struct {
		name      string
		stop      []string
		maxTokens int
		reason    string
	}{
		{"spans two tokens", []string{spanningStop(tokens, 6)}, 0, "stop"},
		{"starts with a split emoji", []string{" " + emoji}, 0, "stop"},
		{"the earliest of several wins", []string{spanningStop(tokens, 9), spanningStop(tokens, 3)}, 0, "stop"},
		{"at the very start", []string{string([]rune(full)[:3])}, 0, "stop"},
		{"false start is released", []string{falseStart}, 10, "length"},
		{"beyond max_tokens does not stop", []string{spanningStop(tokens, 12)}, 8, "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := full
			if tc.maxTokens > 0 {
				out = strings.Join(tokens[:tc.maxTokens], "")
			}
			want := out
			for _, stop := range tc.stop {
				if i := strings.Index(out, stop); i >= 0 && i < len(want) {
					want = out[:i]
				}
			}
			stopJSON, err := json.Marshal(tc.stop)
			require.NoError(t, err)
			extra := `"stop":` + string(stopJSON)
			if tc.maxTokens > 0 {
				extra += `,"max_tokens":` + strconv.Itoa(tc.maxTokens)
			}
			body := strings.Replace(chatBody(extra), `"seed":9`, `"seed":`+strconv.FormatInt(seed, 10), 1)
			resp, raw := f.post(t, "/v1/chat/completions", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			s := checkStream(t, raw, "chat.completion.chunk")
			assert.Equal(t, want, s.text)
			assert.Equal(t, tc.reason, s.finish)
			for _, stop := range tc.stop {
				assert.NotContains(t, s.text, stop)
			}
		})
	}
}

// TestWireHeartbeatsDuringAStall: while the engine stalls mid-answer the
// stream carries `: ping` comments, and the answer is intact afterwards.
func TestWireHeartbeatsDuringAStall(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.Heartbeat = 20 * time.Millisecond },
		func(*npu.Request) sim.Fault { return sim.Fault{StallAtToken: 4, StallFor: 300 * time.Millisecond} })
	resp, raw := f.post(t, "/v1/chat/completions", chatBody(`"max_tokens":8`))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(raw), "\n\n: ping\n\n")
	s := checkStream(t, raw, "chat.completion.chunk")
	assert.Equal(t, prefix(9, hiPrompt, 8), s.text)
	assert.Equal(t, "length", s.finish)
	// Pings between the first text and the finish: the stall.
	during := s.kinds[strings.Index(s.kinds, "t"):strings.Index(s.kinds, "f")]
	assert.GreaterOrEqual(t, strings.Count(during, "p"), 2, "pings during a 300 ms stall at 20 ms intervals (events %s)", s.kinds)
}

// TestWireHeartbeatsCommitWhileQueued: a request queued behind a long one
// gets its 200 and its first ping while it still waits, then its answer.
func TestWireHeartbeatsCommitWhileQueued(t *testing.T) {
	f := newWireFixture(t, func(c *daemon.Config) { c.Heartbeat = 30 * time.Millisecond }, hogFaults(nil))
	release := startHog(t, f.HTTP, f.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL+"/v1/chat/completions", strings.NewReader(chatBody(`"max_tokens":2`)))
	require.NoError(t, err)
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	// The headers came while the request is queued: the hog stalls until
	// released, so nothing else could have sent them.
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.EqualValues(t, 1, queued(t, f.HTTP, f.URL), "still queued when the headers arrived")
	r := bufio.NewReader(resp.Body)
	var head strings.Builder
	readEvent := func() string {
		ev, err := r.ReadString('\n')
		require.NoError(t, err)
		blank, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "\n", blank)
		head.WriteString(ev + blank)
		return ev
	}
	assert.Contains(t, readEvent(), `"delta":{"role":"assistant","content":""}`, "the role chunk rides with the first ping")
	assert.Equal(t, ": ping\n", readEvent())
	assert.Equal(t, ": ping\n", readEvent(), "pings keep coming while queued")
	assert.EqualValues(t, 1, queued(t, f.HTTP, f.URL), "still queued after two pings")

	release()
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	s := checkStream(t, append([]byte(head.String()), rest...), "chat.completion.chunk")
	assert.True(t, strings.HasPrefix(s.kinds, "rpp"), s.kinds)
	assert.Equal(t, prefix(9, hiPrompt, 2), s.text)
	assert.Equal(t, "length", s.finish)
}

func TestWireWholeResponseShape(t *testing.T) {
	daemontest.SimOnly(t, "compares with the simulated answer")
	f := newWireFixture(t, nil, nil)
	tests := []struct {
		name, path, body string
		object           string
		choice           string // the expected choices[0], JSON
	}{
		{"chat", "/v1/chat/completions", `{"model":"sim","seed":9,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, "chat.completion",
			`{"index":0,"message":{"role":"assistant","content":` + jsonString(prefix(9, hiPrompt, 3)) + `},"logprobs":null,"finish_reason":"length"}`},
		{"legacy", "/v1/completions", `{"model":"sim","seed":9,"max_tokens":3,"prompt":"hi"}`, "text_completion",
			`{"index":0,"text":` + jsonString(prefix(9, "hi", 3)) + `,"logprobs":null,"finish_reason":"length"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := f.post(t, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			top := rawFields(t, raw)
			assert.NotContains(t, top, "error")
			assert.Equal(t, jsonString(tc.object), string(top["object"]))
			assert.Equal(t, `"sim"`, string(top["model"]))
			var choices []json.RawMessage
			require.NoError(t, json.Unmarshal(top["choices"], &choices))
			require.Len(t, choices, 1)
			assert.JSONEq(t, tc.choice, string(choices[0]))
			var u wireUsage
			require.NoError(t, json.Unmarshal(top["usage"], &u))
			assert.Equal(t, 3, u.CompletionTokens)
			assert.Equal(t, u.PromptTokens+3, u.TotalTokens)
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
