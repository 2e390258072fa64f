package reqinfo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromWithoutInfoIsUsable(t *testing.T) {
	before := time.Now()
	info := From(context.Background())
	require.NotNil(t, info)
	assert.False(t, info.Start.Before(before), "Start is now")
	assert.False(t, info.Start.After(time.Now()))

	// Handlers write to it freely; MarkFirstToken works from that Start.
	info.Model, info.TokensOut, info.FinishReason = "m", 3, "stop"
	info.MarkFirstToken()
	assert.Positive(t, info.TTFT)

	other := From(context.Background())
	assert.NotSame(t, info, other, "each call without an Info gets its own")
	assert.Empty(t, other.Model, "writes to one do not leak into another")
	assert.Zero(t, other.TTFT)
}

func TestWithAndFrom(t *testing.T) {
	info := &Info{ID: "x"}
	ctx := With(context.Background(), info)
	assert.Same(t, info, From(ctx))
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	assert.Same(t, info, From(child), "derived contexts carry the same Info")
	From(child).Model = "sim"
	assert.Equal(t, "sim", info.Model, "the access log sees what the handler wrote")
}

func TestMarkFirstToken(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		marks []time.Time // MarkFirstTokenAt calls, in order
		want  time.Duration
	}{
		{"first mark sets it", []time.Time{start.Add(250 * time.Millisecond)}, 250 * time.Millisecond},
		{"later marks are ignored", []time.Time{start.Add(time.Second), start.Add(2 * time.Second), start.Add(time.Millisecond)}, time.Second},
		{"zero time is ignored", []time.Time{{}}, 0},
		{"zero then a real mark", []time.Time{{}, start.Add(40 * time.Millisecond)}, 40 * time.Millisecond},
		{"at Start is still marked", []time.Time{start, start.Add(time.Second)}, time.Nanosecond},
		{"before Start (clock step) is still marked", []time.Time{start.Add(-time.Second), start.Add(time.Second)}, time.Nanosecond},
		{"no marks", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := &Info{Start: start}
			for _, at := range tc.marks {
				info.MarkFirstTokenAt(at)
			}
			assert.Equal(t, tc.want, info.TTFT)
		})
	}

	t.Run("MarkFirstToken sets once, from now", func(t *testing.T) {
		info := &Info{Start: time.Now().Add(-time.Second)}
		info.MarkFirstToken()
		first := info.TTFT
		assert.GreaterOrEqual(t, first, time.Second)
		assert.Less(t, first, time.Minute)
		time.Sleep(2 * time.Millisecond)
		info.MarkFirstToken()
		assert.Equal(t, first, info.TTFT, "only the first token counts")
	})
}
