// Package fuzz_test fuzzes ollamaapi's request decoding through its HTTP
// handler on the simulated engine. It is a package of its own because go
// test -fuzz instruments every package of the test binary: here that is
// the API and the engine, not the official client SDKs and the daemon that
// ollamaapi's other tests bring in (half the instrumented build's time).
package fuzz_test

import (
	"bufio"
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
	"github.com/npud/npud/ollamaapi"
)

// checkOllamaResponse fails unless the response is a 4xx {"error": ...}, a
// whole JSON answer, or NDJSON lines ending with done: true or an error.
func checkOllamaResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	body := rec.Body.Bytes()
	if !utf8.Valid(body) {
		t.Fatalf("response is not UTF-8: %q", body)
	}
	if rec.Code >= 400 && rec.Code < 500 {
		var e struct{ Error string }
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
			t.Fatalf("%d without an Ollama error body: %s", rec.Code, body)
		}
		return
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, body)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last map[string]any
	lines := 0
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %d is not JSON: %q", lines, sc.Text())
		}
		if _, bad := last["error"]; bad && lines > 0 {
			return // a failure after the stream began: its last line
		}
		lines++
	}
	if last == nil || last["done"] != true {
		t.Fatalf("no done line at the end: %s", body)
	}
}

// FuzzGenerateAndChat: any body to /api/generate or /api/chat gets a
// correct answer or a 4xx in Ollama's shape, never a panic or a 5xx.
func FuzzGenerateAndChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"sim","prompt":"hi"}`,
		`{"model":"sim","prompt":"hi","stream":false,"options":{"num_predict":3,"temperature":0.2,"stop":["x"]}}`,
		`{"model":"sim","messages":[{"role":"user","content":"hé 🙂"}],"options":{"num_ctx":8}}`,
		`{"model":"sim","messages":[{"role":"tool","content":"x"}],"keep_alive":0}`,
		`{"model":"sim","prompt":"","keep_alive":"5m"}`,
		`{"name":"sim","prompt":"x","format":"json"}`,
		`{"model":"sim","prompt":"x","options":{"num_predict":"many"}}`,
		`{"model":`, ``, `[]`, `{"model":"sim","prompt":"\u0000\ud800"}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	gin.SetMode(gin.ReleaseMode)
	h := gin.New()
	ollamaapi.New(servetest.SimRouter(f, 64), ollamaapi.Config{DefaultTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler)).Register(h)
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		path := "/api/generate"
		if chat {
			path = "/api/chat"
		}
		rec := httptest.NewRecorder()
		served := make(chan struct{})
		go func() {
			defer close(served)
			h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, strings.NewReader(body)))
		}()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer after 5 s, past the 2 s generation deadline: %q", body)
		}
		checkOllamaResponse(t, rec)
	})
}
