package anthropicapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/nputest"
	"github.com/npud/npud/npu/sim"
)

// Issue 37: output_config.format, as the anthropic package's parse sends
// it, reaches the engine as the request's Format, whole and streamed, over
// a real server. Before, it was dropped without a word: the answer came
// back free text and the SDK's parse failed later.
func TestOutputConfigFormatReachesTheEngine(t *testing.T) {
	const schema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	var mu sync.Mutex
	var got []*npu.Format
	srv := daemontest.StartSim(t, nil, func(r *npu.Request) sim.Fault {
		mu.Lock()
		got = append(got, r.Format)
		mu.Unlock()
		return sim.Fault{}
	})
	c := daemontest.NewClient(t, srv.URL)
	body := `{"model":"sim","max_tokens":20,"messages":[{"role":"user","content":"where?"}],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}}`
	for _, stream := range []bool{false, true} {
		mu.Lock()
		got = nil
		mu.Unlock()
		b := body
		if stream {
			b = strings.Replace(b, `"max_tokens":20`, `"max_tokens":20,"stream":true`, 1)
		}
		resp, raw := c.Do(t, http.MethodPost, "/v1/messages", b)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		mu.Lock()
		require.Len(t, got, 1)
		assert.Equal(t, &npu.Format{Type: npu.FormatJSONSchema, Schema: json.RawMessage(schema), Strict: true}, got[0], "stream=%v", stream)
		mu.Unlock()
	}
	resp, raw := c.Do(t, http.MethodPost, "/v1/messages", strings.Replace(body, `"type":"json_schema"`, `"type":"regex"`, 1))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	assert.Equal(t, "error", e.Type)
	assert.Equal(t, "invalid_request_error", e.Error.Type)
	assert.Equal(t, `output_config.format.type: must be json_schema, got "regex"`, e.Error.Message)
}

// Issue 37: the router's refusal of a schema (a keyword npud cannot hold
// an answer to) is a 400 naming output_config.format and the keyword.
func TestSchemaRefusalNamesOutputConfigFormat(t *testing.T) {
	gin.SetMode(gin.TestMode)
	router := gin.New()
	refusal := &npu.InvalidRequestError{Param: npu.FormatParam, Message: `unsupported keyword "patternProperties" at /properties/a`}
	anthropicapi.New(&nputest.RefusingRouter{Err: refusal}, anthropicapi.Config{}, slog.New(slog.DiscardHandler)).Register(router)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	resp, raw := daemontest.NewClient(t, srv.URL).Do(t, http.MethodPost, anthropicapi.MessagesPath,
		`{"model":"local","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
	assert.Contains(t, string(raw), `"message":"output_config.format: unsupported keyword \"patternProperties\" at /properties/a"`)
}
