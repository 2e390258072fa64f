package daemon_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

func TestRequestIDHeader(t *testing.T) {
	r := startServer(t, nil, nil)
	c := &daemontest.Client{URL: r.url, HTTP: r.client}
	tests := []struct {
		name   string
		sent   string // "" sends no header
		echoed bool
	}{
		{"sane id", "req-42", true},
		{"every allowed character", "AZaz09._:-", true},
		{"128 characters", strings.Repeat("x", 128), true},
		{"no header", "", false},
		{"129 characters", strings.Repeat("x", 129), false},
		{"space", "two words", false},
		{"quote", `a"b`, false},
		{"slash", "a/b", false},
		{"non-ASCII", "ümlaut", false},
		{"JSON breaker", `x","level":"ERROR`, false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.sent != "" {
				header = []string{"X-Request-ID", tc.sent}
			}
			// A chat stream: the id also names the completion.
			resp, raw := c.Do(t, http.MethodPost, "/v1/chat/completions", chat("id", `"max_tokens":1`), header...)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
			got := resp.Header.Get("X-Request-ID")
			if tc.echoed {
				assert.Equal(t, tc.sent, got)
			} else {
				assert.Regexp(t, `^[0-9a-f]{24}$`, got, "a generated id replaces %q", tc.sent)
				assert.False(t, seen[got], "generated ids are unique")
				seen[got] = true
			}
			assert.Contains(t, string(raw), `"id":"chatcmpl-`+got+`"`)
			waitFor(t, func() bool { return len(r.logs.accessLines(got)) == 1 })
		})
	}
}

func TestRouteErrors(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	tests := []struct {
		name, method, path string
		status             int
		allow              string // Allow header on 405
		openAI             bool   // OpenAI's error shape, else Ollama's
		code               string // OpenAI error code
	}{
		{"unknown /v1 path", http.MethodGet, "/v1/nothing", 404, "", true, "not_found"},
		{"unknown /v1 POST", http.MethodPost, "/v1/embeddings/x", 404, "", true, "not_found"},
		{"unknown top-level path", http.MethodGet, "/nothing", 404, "", true, "not_found"},
		{"unknown /api path", http.MethodGet, "/api/nothing", 404, "", false, ""},
		{"unknown /api POST", http.MethodPost, "/api/unknown", 404, "", false, ""},
		{"GET on a POST route under /v1", http.MethodGet, "/v1/chat/completions", 405, "POST", true, "method_not_allowed"},
		{"DELETE on a GET route under /v1", http.MethodDelete, "/v1/models", 405, "GET", true, "method_not_allowed"},
		{"GET on a POST route under /api", http.MethodGet, "/api/chat", 405, "POST", false, ""},
		{"POST on a DELETE route under /api", http.MethodPost, "/api/delete", 405, "DELETE", false, ""},
		{"POST on /health", http.MethodPost, "/health", 405, "GET, HEAD", true, "method_not_allowed"},
	}
	resp, _ := c.Do(t, http.MethodHead, "/health", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "health checkers may send HEAD")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := c.Do(t, tc.method, tc.path, "{}")
			require.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
			assert.Equal(t, tc.allow, resp.Header.Get("Allow"))
			assert.NotEmpty(t, resp.Header.Get("X-Request-ID"), "route errors pass through the middleware")
			if tc.openAI {
				var body struct {
					Error struct {
						Message string  `json:"message"`
						Type    string  `json:"type"`
						Param   *string `json:"param"`
						Code    string  `json:"code"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
				assert.Equal(t, "invalid_request_error", body.Error.Type)
				assert.Equal(t, tc.code, body.Error.Code)
				assert.Nil(t, body.Error.Param)
				assert.Contains(t, body.Error.Message, tc.path)
				assert.Contains(t, body.Error.Message, tc.method)
				return
			}
			var body map[string]any
			require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
			require.Len(t, body, 1, "Ollama's shape is {\"error\": \"...\"}: %s", raw)
			msg, ok := body["error"].(string)
			require.True(t, ok, "%s", raw)
			assert.Contains(t, msg, tc.path)
		})
	}
}
