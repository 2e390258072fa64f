package anthropicapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
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
