package wsapi_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
)

// Issue 37: a start message is a chat request, response_format included:
// it reaches the engine as the generation's Format; a bad one and n > 1
// are errors naming the parameter.
func TestStartTakesResponseFormat(t *testing.T) {
	var mu sync.Mutex
	var formats []*npu.Format
	srv := startSim(t, nil, func(r *npu.Request) sim.Fault {
		mu.Lock()
		formats = append(formats, r.Format)
		mu.Unlock()
		return sim.Fault{}
	})
	c := mustDial(t, srv.URL)
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		"required": []string{"name"}, "additionalProperties": false}
	c.send(startMsg("s1", "who?", 200, "response_format", map[string]any{"type": "json_schema",
		"json_schema": map[string]any{"name": "P", "schema": schema}}))
	text, last := c.collect("s1")
	require.Equal(t, "final", last["s1"].Type, "%+v", last["s1"])
	var answer struct {
		Name *string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte(text["s1"]), &answer), "the answer is the schema's document: %q", text["s1"])
	require.NotNil(t, answer.Name)
	mu.Lock()
	require.Len(t, formats, 1)
	assert.Equal(t, npu.FormatJSONSchema, formats[0].Type)
	assert.Equal(t, "P", formats[0].Name)
	assert.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`, string(formats[0].Schema))
	mu.Unlock()

	c.send(startMsg("s2", "who?", 8, "response_format", map[string]any{"type": "yaml"}))
	_, last = c.collect("s2")
	assert.Equal(t, "error", last["s2"].Type)
	assert.Contains(t, last["s2"].Message, "'response_format.type' must be text, json_object or json_schema")

	c.send(startMsg("s3", "who?", 8, "n", 2))
	_, last = c.collect("s3")
	assert.Equal(t, "error", last["s3"].Type)
	assert.Contains(t, last["s3"].Message, "'n' must be 1 on the WebSocket")
}
