package openaiapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/openaiapi"
)

// What the router refuses becomes OpenAI's error object, status and
// Retry-After before any byte of a stream, on chat completions and the
// Responses API alike: asserted against a fake router, no daemon.
func TestRefusalsFromTheRouter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name       string
		model      string
		err        error
		status     int
		code       string
		retryAfter string
		started    int
	}{
		{"queue full", "local", fmt.Errorf("wrapped: %w", npu.ErrQueueFull), http.StatusServiceUnavailable, "queue_full", "2", 1},
		{"context too long", "local", fmt.Errorf("prompt of 5000 tokens: %w", npu.ErrContextLength), http.StatusBadRequest, "context_length_exceeded", "", 1},
		{"engine failure", "local", &npu.EngineError{Engine: "fake", Cause: io.ErrUnexpectedEOF}, http.StatusInternalServerError, "engine_error", "", 1},
		{"unknown model", "gpt-5-codex", nil, http.StatusNotFound, "model_not_found", "", 0},
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s%s/stream=%v", tc.name, path, stream), func(t *testing.T) {
					fake := &nputest.RefusingRouter{Err: tc.err, Retry: 1500 * time.Millisecond}
					router := gin.New()
					openaiapi.New(fake, openaiapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
					srv := httptest.NewServer(router)
					t.Cleanup(srv.Close)
					body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}],"input":"hi"}`, tc.model, stream)
					if path == "/v1/chat/completions" {
						body = strings.Replace(body, `,"input":"hi"`, "", 1)
					} else {
						body = strings.Replace(body, `"messages":[{"role":"user","content":"hi"}],`, "", 1)
					}
					resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, path, body)
					assert.Equal(t, tc.status, resp.StatusCode, "%s", raw)
					assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
					var out struct {
						Error struct {
							Code    string `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					require.NoError(t, json.Unmarshal(raw, &out), "an error before the stream began is a plain JSON body: %s", raw)
					assert.Equal(t, tc.code, out.Error.Code)
					assert.NotEmpty(t, out.Error.Message)
					assert.Equal(t, tc.started, fake.Started())
				})
			}
		}
	}
}
