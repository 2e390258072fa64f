package reqinfo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFromWithoutInfoIsUsable(t *testing.T) {
	info := From(context.Background())
	info.Model = "m" // must not panic
	assert.False(t, info.Start.IsZero())
}

func TestWithAndMarkFirstToken(t *testing.T) {
	info := &Info{ID: "x", Start: time.Now().Add(-time.Second)}
	ctx := With(context.Background(), info)
	assert.Same(t, info, From(ctx))
	info.MarkFirstToken()
	first := info.TTFT
	assert.GreaterOrEqual(t, first, time.Second)
	info.MarkFirstToken()
	assert.Equal(t, first, info.TTFT, "only the first token counts")
}
