package ollamaapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
)

// Issue 37, through the official Ollama Python client (ollama, pinned):
// format=Model.model_json_schema() on chat (whole and streamed) and
// generate gets answers that validate as the pydantic model, format="json"
// a JSON object, on the simulated engine; a schema keyword npud cannot
// hold an answer to is a 400 naming format and the keyword.
func TestOllamaPythonStructuredFormat(t *testing.T) {
	srv := daemontest.StartSim(t, nil, nil)
	r := daemontest.RunPython(t, "ollama_e2e.py", srv.URL, "structured")
	for _, key := range []string{"whole", "streamed", "generated"} {
		city, ok := r[key].(map[string]any)
		require.True(t, ok, "%s: %v", key, r)
		assert.IsType(t, "", city["name"])
		assert.IsType(t, true, city["coastal"])
	}
	assert.Equal(t, "stop", r["done_reason"])
	assert.IsType(t, map[string]any{}, r["json_mode"])

	r = daemontest.RunPython(t, "ollama_e2e.py", srv.URL, "unsupported_schema")
	assert.EqualValues(t, 400, r["status"], "%v", r)
	assert.Contains(t, r["error"], `format: schema keyword "pattern" at /properties/code is not supported`)
}
