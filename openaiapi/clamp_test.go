package openaiapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/reqinfo"
)

// TestMaxTokensClamped (issue 31): a completion limit larger than the room
// the prompt leaves in the context is lowered to that room, not refused
// (OpenCode and Claude Code send max_tokens 32000 on every request): the
// answer runs to the room, says finish_reason length, counts its usage
// truly and names the limit it ran with in X-Npud-Max-Tokens-Clamped. Only
// a prompt that leaves no room is a 400.
func TestMaxTokensClamped(t *testing.T) {
	const contextLength = 24 // less than the room for the simulated answer (32 tokens or more)
	srv := daemontest.Start(t, daemontest.Defaults(t), sim.New(sim.Config{TTFT: time.Millisecond, ITL: time.Millisecond, ContextLength: contextLength}))
	c := daemontest.NewClient(t, srv.URL)
	const (
		chat   = "/v1/chat/completions"
		legacy = "/v1/completions"
		msgs   = `"messages":[{"role":"user","content":"hi"}]`
	)
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	type answer struct {
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *usage `json:"usage"`
	}
	// read returns the finish reason and usage of a whole answer or of a
	// stream's chunks.
	read := func(t *testing.T, raw []byte, stream bool) (string, usage) {
		t.Helper()
		var bodies [][]byte
		if stream {
			for _, ev := range splitEvents(t, raw) {
				if !ev.comment && ev.data != "[DONE]" {
					bodies = append(bodies, []byte(ev.data))
				}
			}
		} else {
			bodies = [][]byte{raw}
		}
		var reason string
		var u usage
		for _, b := range bodies {
			var a answer
			require.NoError(t, json.Unmarshal(b, &a), "%s", b)
			for _, ch := range a.Choices {
				if ch.FinishReason != nil {
					reason = *ch.FinishReason
				}
			}
			if a.Usage != nil {
				u = *a.Usage
			}
		}
		return reason, u
	}

	t.Run("clamped", func(t *testing.T) {
		for _, tc := range []struct{ name, path, body string }{
			{"chat, max_tokens", chat, `{"model":"sim",` + msgs + `,"max_tokens":32000}`},
			{"chat, max_completion_tokens", chat, `{"model":"sim",` + msgs + `,"max_completion_tokens":32000}`},
			{"chat, streaming as OpenCode asks", chat, `{"model":"sim","stream":true,"stream_options":{"include_usage":true},` + msgs + `,"max_tokens":32000}`},
			{"legacy completions", legacy, `{"model":"sim","prompt":"hi","max_tokens":32000}`},
			{"legacy, streaming", legacy, `{"model":"sim","prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":32000}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
				ran, err := strconv.Atoi(resp.Header.Get(reqinfo.MaxTokensClampedHeader))
				require.NoError(t, err, "the header says the limit it ran with")
				reason, u := read(t, raw, strings.Contains(tc.body, `"stream":true`))
				assert.Equal(t, "length", reason, "the clamp was reached")
				assert.Equal(t, ran, u.CompletionTokens, "it generated up to the clamp")
				assert.Equal(t, contextLength, u.PromptTokens+u.CompletionTokens, "the clamp is the room the prompt left")
			})
		}
	})

	t.Run("the context is in /v1/models", func(t *testing.T) {
		resp, raw := c.Do(t, http.MethodGet, "/v1/models/sim", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		var m struct {
			ContextLength int `json:"context_length"`
		}
		require.NoError(t, json.Unmarshal(raw, &m))
		assert.Equal(t, contextLength, m.ContextLength)
	})

	t.Run("within the room: not clamped", func(t *testing.T) {
		resp, raw := c.Do(t, http.MethodPost, chat, `{"model":"sim",`+msgs+`,"max_tokens":3}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Empty(t, resp.Header.Get(reqinfo.MaxTokensClampedHeader))
		reason, u := read(t, raw, false)
		assert.Equal(t, "length", reason)
		assert.Equal(t, 3, u.CompletionTokens)
	})

	t.Run("refused", func(t *testing.T) {
		long := strings.Repeat("x", 4*contextLength) // more tokens than the context by itself
		for _, tc := range []struct{ name, path, body, param, code string }{
			{"prompt over the context", chat, `{"model":"sim","messages":[{"role":"user","content":"` + long + `"}],"max_tokens":1}`, "messages", "context_length_exceeded"},
			{"prompt over the context, streaming", chat, `{"model":"sim","stream":true,"messages":[{"role":"user","content":"` + long + `"}]}`, "messages", "context_length_exceeded"},
			{"legacy: names the prompt", legacy, `{"model":"sim","prompt":"` + long + `","max_tokens":32000}`, "prompt", "context_length_exceeded"},
			{"max_tokens 0", chat, `{"model":"sim",` + msgs + `,"max_tokens":0}`, "max_tokens", "invalid_value"},
			{"max_completion_tokens negative", chat, `{"model":"sim",` + msgs + `,"max_completion_tokens":-5}`, "max_completion_tokens", "invalid_value"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, raw := c.Do(t, http.MethodPost, tc.path, tc.body)
				require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), "refused before any byte of a stream")
				assert.Empty(t, resp.Header.Get(reqinfo.MaxTokensClampedHeader))
				e := decodeError(t, raw)
				assert.Equal(t, tc.code, e.code())
				if assert.NotNil(t, e.Param) {
					assert.Equal(t, tc.param, *e.Param)
				}
			})
		}
	})
}

// TestMaxTokensClampedOpenVINO (issue 31): the OpenVINO engine learns the
// prompt's length only from GenAI's result (the C API has no tokenizer),
// so it says at the end that a limit was clamped: in the header of an
// answer that is not streamed.
func TestMaxTokensClampedOpenVINO(t *testing.T) {
	srv := daemontest.StartOpenVINO(t, nil)
	c := daemontest.NewClient(t, srv.URL)
	resp, raw := c.Do(t, http.MethodGet, "/v1/models/sim", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var m struct {
		ContextLength int `json:"context_length"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Positive(t, m.ContextLength)

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":`+strconv.Itoa(10*m.ContextLength)+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var a struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &a))
	assert.Equal(t, strconv.Itoa(m.ContextLength-a.Usage.PromptTokens), resp.Header.Get(reqinfo.MaxTokensClampedHeader),
		"the room the prompt left")

	resp, raw = c.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Empty(t, resp.Header.Get(reqinfo.MaxTokensClampedHeader), "a limit within the room")
}
