package npu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompletionLimit(t *testing.T) {
	tests := []struct {
		name                     string
		maxTokens, prompt, ctx   int
		limit                    int
		clamped, tooLong, badArg bool
	}{
		{name: "within the room", maxTokens: 10, prompt: 100, ctx: 200, limit: 10},
		{name: "exactly the room", maxTokens: 100, prompt: 100, ctx: 200, limit: 100},
		{name: "one over: clamped", maxTokens: 101, prompt: 100, ctx: 200, limit: 100, clamped: true},
		{name: "OpenCode's 32000 on a 32768 context", maxTokens: 32000, prompt: 2415, ctx: 32768, limit: 30353, clamped: true},
		{name: "no limit: the room", maxTokens: 0, prompt: 100, ctx: 200, limit: 100},
		{name: "one token of room", maxTokens: 5, prompt: 199, ctx: 200, limit: 1, clamped: true},
		{name: "the prompt fills the context", maxTokens: 5, prompt: 200, ctx: 200, tooLong: true},
		{name: "the prompt is over the context", maxTokens: 0, prompt: 300, ctx: 200, tooLong: true},
		{name: "negative limit", maxTokens: -1, prompt: 1, ctx: 200, badArg: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit, clamped, err := CompletionLimit(tc.maxTokens, tc.prompt, tc.ctx)
			switch {
			case tc.tooLong:
				require.ErrorIs(t, err, ErrContextLength)
				assert.Contains(t, err.Error(), "no room")
			case tc.badArg:
				require.ErrorIs(t, err, ErrInvalidRequest)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.limit, limit)
				assert.Equal(t, tc.clamped, clamped)
			}
		})
	}
}
