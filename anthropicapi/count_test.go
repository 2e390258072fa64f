package anthropicapi_test

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

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
)

// countTokens posts body to count_tokens: the count, and how the header
// says it was counted ("exact" or "estimate"), which the body agrees with.
func countTokens(t *testing.T, c *daemontest.Client, body string) (int, string) {
	t.Helper()
	resp, raw := c.Do(t, http.MethodPost, anthropicapi.CountTokensPath, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var got struct {
		InputTokens *int  `json:"input_tokens"`
		Estimate    *bool `json:"npud_estimate"`
	}
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	require.NotNil(t, got.InputTokens, "%s", raw)
	require.NotNil(t, got.Estimate, "%s", raw)
	how := resp.Header.Get(anthropicapi.EstimateHeader)
	assert.Equal(t, how == "estimate", *got.Estimate, "header %q, body %s", how, raw)
	return *got.InputTokens, how
}

// messageInputTokens sends body as a message of one token: the prompt
// tokens its usage reports (what was read from the cache included).
func messageInputTokens(t *testing.T, c *daemontest.Client, body string) int {
	t.Helper()
	body = strings.Replace(body, `{"model":`, `{"max_tokens":1,"model":`, 1)
	resp, raw := c.Do(t, http.MethodPost, anthropicapi.MessagesPath, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	var m struct {
		Usage struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	require.Positive(t, m.Usage.InputTokens+m.Usage.CacheReadInputTokens, "%s", raw)
	return m.Usage.InputTokens + m.Usage.CacheReadInputTokens
}

// The estimate's rule, for the models npud does not count: four tokens a
// message for the template, the text's bytes at four a token (rounded
// up), an image by its pixels (750 a token).
func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  npu.Request
		want int
	}{
		{"one message", npu.Request{Messages: []npu.Message{{Role: "user", Content: "hello"}}}, 4 + 2},
		{"system and user", npu.Request{Messages: []npu.Message{{Role: "system", Content: "be brief"},
			{Role: "user", Content: "What is in this picture, in twelve words?"}}}, 2*4 + (8+41+3)/4},
		{"an image", npu.Request{Messages: []npu.Message{{Role: "user", Content: "hi",
			Images: []npu.Image{{Width: 150, Height: 100}}}}}, 4 + 20 + 1},
		{"a tool and a call", npu.Request{Tools: []npu.Tool{{Name: "f", Description: "does", Parameters: json.RawMessage(`{}`)}},
			Messages: []npu.Message{{Role: "assistant", ToolCalls: []npu.ToolCall{{Name: "f", Arguments: `{"a":1}`}}}}},
			4 + (1+4+2+1+7+3)/4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, anthropicapi.EstimateTokens(&tc.req))
		})
	}
}

// What the router answers a count becomes count_tokens' answer: a count
// (exact), a model it does not count (the estimate, as before), or a
// refusal in Anthropic's shape.
func TestCountTokensFromTheRouter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		header     string
		errType    string
		retryAfter string
	}{
		{"not counted", fmt.Errorf("model %q: GenAI renders its prompts: %w", "local", npu.ErrPromptNotCounted), http.StatusOK, "estimate", "", ""},
		{"tenant at its cap", fmt.Errorf("tenant: %w", npu.ErrTooManyStreams), http.StatusTooManyRequests, "", "rate_limit_error", "3"},
		{"draining", npu.ErrShuttingDown, anthropicapi.StatusOverloaded, "", "overloaded_error", "3"},
		{"worker crashed", npu.ErrEngineCrashed, anthropicapi.StatusOverloaded, "", "overloaded_error", "3"},
		{"engine failure", &npu.EngineError{Engine: "fake", Cause: io.ErrUnexpectedEOF}, http.StatusInternalServerError, "", "api_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &nputest.RefusingRouter{Err: tc.err, Retry: 2500 * time.Millisecond}
			router := gin.New()
			anthropicapi.New(fake, anthropicapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
			srv := httptest.NewServer(router)
			t.Cleanup(srv.Close)
			resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, anthropicapi.CountTokensPath,
				`{"model":"local","messages":[{"role":"user","content":"hello"}]}`)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", raw)
			assert.Equal(t, tc.header, resp.Header.Get(anthropicapi.EstimateHeader))
			assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			assert.Equal(t, 1, fake.Started(), "the count reached the router")
			if tc.status == http.StatusOK {
				assert.JSONEq(t, `{"input_tokens":6,"npud_estimate":true}`, string(raw))
				return
			}
			var out errorReply
			require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
			assert.Equal(t, "error", out.Type)
			assert.Equal(t, tc.errType, out.Error.Type)
		})
	}
}
