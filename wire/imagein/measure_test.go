package imagein

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Measure reads an image's size from its header, within the limits Decode
// applies, and holds nothing of the budget.
func TestMeasureReadsTheSizeAndHoldsNothing(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 400, 300))))
	budget := NewBudget(1) // too small for any decode
	for _, tc := range []struct {
		name   string
		limits Limits
		err    bool
	}{
		{"within the limits", Limits{Budget: budget}, false},
		{"more pixels than allowed", Limits{Budget: budget, MaxPixels: 400*300 - 1}, true},
		{"a larger file than allowed", Limits{Budget: budget, MaxBytes: int64(b.Len() - 1)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bt := tc.limits.Measure()
			img, err := bt.Decode(b.Bytes())
			if tc.err {
				require.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 400, img.Width)
			assert.Equal(t, 300, img.Height)
			assert.Empty(t, img.RGB, "nothing decoded")
			assert.Zero(t, bt.Held())
			assert.Zero(t, budget.InUse())
		})
	}
	_, err := Limits{}.Measure().Decode([]byte("GIF89a"))
	assert.ErrorIs(t, err, ErrInvalid, "the format is checked as for a decode")
}
