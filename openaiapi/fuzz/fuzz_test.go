// Package fuzz_test fuzzes openaiapi's request decoding through its HTTP
// handler on the simulated engine. It is a package of its own because go
// test -fuzz instruments every package of the test binary: here that is
// the API and the engine, not the official client SDKs and the daemon that
// openaiapi's other tests bring in (half the instrumented build's time).
package fuzz_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu/serve/servetest"
	"github.com/npud/npud/openaiapi"
)

// fuzzHandler is the API on a fast simulated engine, served in-process.
func fuzzHandler(f *testing.F) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	openaiapi.New(servetest.SimRouter(f, 64), openaiapi.Config{DefaultTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler)).Register(r)
	return r
}

// checkOpenAIResponse fails unless the response is correct framing: a 4xx
// in OpenAI's error shape, a whole JSON answer, or an event stream of JSON
// events ending in [DONE].
func checkOpenAIResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	body := rec.Body.Bytes()
	if !utf8.Valid(body) {
		t.Fatalf("response is not UTF-8: %q", body)
	}
	switch {
	case rec.Code >= 400 && rec.Code < 500:
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
			t.Fatalf("%d without an OpenAI error body: %s", rec.Code, body)
		}
	case rec.Code != http.StatusOK:
		t.Fatalf("status %d: %s", rec.Code, body)
	case strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
		frames := strings.Split(string(body), "\n\n")
		if frames[len(frames)-1] != "" || frames[len(frames)-2] != "data: [DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", body)
		}
		for _, fr := range frames[:len(frames)-2] {
			if strings.HasPrefix(fr, ":") {
				continue
			}
			data, ok := strings.CutPrefix(fr, "data: ")
			if !ok || strings.Contains(data, "\n") || !json.Valid([]byte(data)) {
				t.Fatalf("bad frame %q", fr)
			}
		}
	default:
		var whole struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(body, &whole); err != nil || len(whole.Choices) != 1 {
			t.Fatalf("bad whole response: %s", body)
		}
	}
}

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"sim","stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"messages":[{"role":"user","content":"hé 🙂"}]}`,
		`{"model":"sim","prompt":"x","stop":["a","b"],"max_tokens":3}`,
		`{"model":"sim","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`,
		`{"model":"sim","messages":[],"temperature":9}`,
		`{"model":"sim","messages":[{"role":"tool","content":"x"}],"n":2}`,
		`{"model":"sim","messages":"nope"}`,
		`{"model":`, ``, `[]`, `null`, `{"model":"sim","messages":[{"role":"user","content":"\u0000\ud800"}]}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
}

// FuzzChatCompletions: any body to /v1/chat/completions or /v1/completions
// gets a correct answer or a 4xx in the right shape, never a panic or 5xx.
func FuzzChatCompletions(f *testing.F) {
	fuzzSeeds(f)
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body string, legacy bool) {
		path := "/v1/chat/completions"
		if legacy {
			path = "/v1/completions"
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader([]byte(body)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkOpenAIResponse(t, rec)
	})
}
