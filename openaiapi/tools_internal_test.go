package openaiapi

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/openaiwire"
)

// The tools of one request are bounded (a body limit larger than the
// daemon's test default would otherwise let any number through).
func TestTooManyTools(t *testing.T) {
	req := request{Model: "sim", Messages: []message{{Role: "user", Content: contentText{Text: "x", present: true}}}}
	for i := range maxTools + 1 {
		td := toolDef{Type: "function"}
		td.Function = &openaiwire.Function{Name: fmt.Sprintf("f%d", i)}
		req.Tools = append(req.Tools, td)
	}
	_, err := req.toEngineRequest(chatEndpoint, 0)
	require.NotNil(t, err)
	assert.Equal(t, "tools", err.Param)
	assert.Contains(t, err.Message, "at most 128")
}
