package anthropicapi_test

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

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
)

// What the router refuses becomes Anthropic's error, status and
// Retry-After, before any byte of a stream: asserted against a fake
// router, so each refusal is reached directly, not by filling a real
// queue.
func TestMessagesRefusalsFromTheRouter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name       string
		model      string
		err        error
		status     int
		errType    string
		retryAfter string
		started    int
	}{
		{"queue full", "local", fmt.Errorf("wrapped: %w", npu.ErrQueueFull), anthropicapi.StatusOverloaded, "overloaded_error", "3", 1},
		{"draining", "local", npu.ErrShuttingDown, anthropicapi.StatusOverloaded, "overloaded_error", "3", 1},
		{"context too long", "local", fmt.Errorf("prompt of 5000 tokens: %w", npu.ErrContextLength), http.StatusBadRequest, "invalid_request_error", "", 1},
		{"engine failure", "local", &npu.EngineError{Engine: "fake", Cause: io.ErrUnexpectedEOF}, http.StatusInternalServerError, "api_error", "", 1},
		{"unknown model", "claude-sonnet-4-5", nil, http.StatusNotFound, "not_found_error", "", 0},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				fake := &nputest.RefusingRouter{Err: tc.err, Retry: 2500 * time.Millisecond}
				router := gin.New()
				anthropicapi.New(fake, anthropicapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
				srv := httptest.NewServer(router)
				t.Cleanup(srv.Close)
				body := fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tc.model, stream)
				resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, anthropicapi.MessagesPath, body)
				assert.Equal(t, tc.status, resp.StatusCode, "%s", raw)
				assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
				var out struct {
					Type  string `json:"type"`
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(raw, &out), "an error before the stream began is a plain JSON body: %s", raw)
				assert.Equal(t, "error", out.Type)
				assert.Equal(t, tc.errType, out.Error.Type)
				assert.NotEmpty(t, out.Error.Message)
				assert.Equal(t, tc.started, fake.Started())
			})
		}
	}
}
