package ollamaapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/ollamaapi"
)

// What the router refuses becomes Ollama's {"error"} with its status and
// Retry-After before any line of a stream, on chat, generate and embed
// alike: asserted against a fake router, no daemon.
func TestRefusalsFromTheRouter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name       string
		model      string
		err        error
		status     int
		retryAfter string
		started    int
	}{
		{"queue full", "local", fmt.Errorf("wrapped: %w", npu.ErrQueueFull), http.StatusServiceUnavailable, "2", 1},
		{"tenant at its cap", "local", fmt.Errorf("tenant %q: %w", "alice", npu.ErrTooManyStreams), http.StatusTooManyRequests, "2", 1},
		{"context too long", "local", fmt.Errorf("prompt of 5000 tokens: %w", npu.ErrContextLength), http.StatusBadRequest, "", 1},
		{"engine failure", "local", &npu.EngineError{Engine: "fake", Cause: io.ErrUnexpectedEOF}, http.StatusInternalServerError, "", 1},
		{"unknown model", "llama3", nil, http.StatusNotFound, "", 0},
	} {
		for _, call := range []struct{ path, body string }{
			{"/api/chat", `{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`},
			{"/api/generate", `{"model":%q,"stream":%v,"prompt":"hi"}`},
			{"/api/embed", `{"model":%q,"truncate":%v,"input":"hi"}`},
		} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s%s/stream=%v", tc.name, call.path, stream), func(t *testing.T) {
					fake := &nputest.RefusingRouter{Err: tc.err, Retry: 1500 * time.Millisecond}
					router := gin.New()
					ollamaapi.New(fake, ollamaapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
					srv := httptest.NewServer(router)
					t.Cleanup(srv.Close)
					body := fmt.Sprintf(call.body, tc.model, stream)
					resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, call.path, body)
					assert.Equal(t, tc.status, resp.StatusCode, "%s", raw)
					assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
					var out struct {
						Error string `json:"error"`
					}
					require.NoError(t, json.Unmarshal(raw, &out), "an error before the stream began is a plain JSON body: %s", raw)
					assert.NotEmpty(t, out.Error)
					assert.Equal(t, tc.started, fake.Started())
				})
			}
		}
	}
}
