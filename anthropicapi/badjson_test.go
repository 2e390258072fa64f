package anthropicapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/anthropicapi"
	"github.com/npud/npud/daemon/daemontest"
)

// Issue 35: a body that is not JSON, or not an object, was answered with
// the Go decoder's text ("json: cannot unmarshal array into Go value of
// type anthropicapi.request"). It is a clear invalid_request_error in
// Anthropic's shape.
func TestBadJSONIsAnsweredInAnthropicTerms(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	c := daemontest.NewClient(t, srv.URL)
	for _, tc := range []struct{ name, body, want string }{
		{"empty", ``, "the request body is empty: it must be a JSON object"},
		{"blank", "  \n", "the request body is empty: it must be a JSON object"},
		{"an array", `[]`, "the request body must be an object, got array"},
		{"a string", `"hi"`, "the request body must be an object, got string"},
		{"cut short", `{"model":"sim",`, "the request body is not valid JSON: it ends at byte 15 before its JSON does"},
		{"a bare word", `{"model":sim}`, "the request body is not valid JSON: at byte 10, invalid character 's'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.Do(t, http.MethodPost, anthropicapi.MessagesPath, tc.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
			var e errorReply
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, "error", e.Type)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Contains(t, e.Error.Message, tc.want)
			assert.NotContains(t, e.Error.Message, "Go value")
			assert.NotContains(t, e.Error.Message, "json:")
		})
	}
}
