package openaichat

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/wirefmt/openaiwire"
)

// The tools of one request are bounded (a body limit larger than the
// daemon's test default would otherwise let any number through).
func TestTooManyTools(t *testing.T) {
	req := openaiwire.ChatRequest{Model: "sim", Messages: []openaiwire.Message{{Role: "user", Content: openaiwire.Content{Text: "x", Present: true}}}}
	for i := range MaxTools + 1 {
		req.Tools = append(req.Tools, openaiwire.Tool{Type: "function", Function: &openaiwire.Function{Name: fmt.Sprintf("f%d", i)}})
	}
	_, err := EngineRequest(&req, Chat, 0)
	require.NotNil(t, err)
	assert.Equal(t, "tools", err.Param)
	assert.Contains(t, err.Message, "at most 128")
}
