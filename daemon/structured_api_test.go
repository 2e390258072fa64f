package daemon_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 37: a schema keyword npud cannot hold an answer to is a 400 on
// every API, in its shape, naming the keyword and the API's own field,
// through the real router (which compiles the schema) before anything
// runs.
func TestSchemaKeywordRefusedOnEveryAPI(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	const schema = `{"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{3}$"}},"required":["code"]}`
	const keyword = `schema keyword \"pattern\" at /properties/code is not supported`
	for _, tc := range []struct{ name, path, body, want string }{
		{"chat", "/v1/chat/completions",
			`{"model":"sim","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"A","schema":` + schema + `}}}`,
			`"param":"response_format"`},
		{"responses", "/v1/responses",
			`{"model":"sim","input":"x","text":{"format":{"type":"json_schema","name":"A","schema":` + schema + `}}}`,
			`"param":"text.format"`},
		{"ollama", "/api/chat", `{"model":"sim","messages":[{"role":"user","content":"x"}],"format":` + schema + `}`,
			`{"error":"format: ` + keyword},
		{"anthropic", "/v1/messages",
			`{"model":"sim","max_tokens":50,"messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}}`,
			`"message":"output_config.format: ` + keyword},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, srv.URL+tc.path, tc.body)
			raw, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", raw)
			assert.Contains(t, string(raw), tc.want)
			assert.Contains(t, string(raw), keyword)
		})
	}
}
