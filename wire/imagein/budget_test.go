package imagein

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// Issue 25 item 1: what a picture costs is read from its header, at the
// depth the decoder decodes to — a 16-bit PNG at 8 bytes a pixel, a
// palette PNG at 1 — plus the RGB copy kept for the generation.
func TestDecoderBytesAtDecodedDepth(t *testing.T) {
	const w, h = 64, 32
	rect := image.Rect(0, 0, w, h)
	palette := image.NewPaletted(rect, color.Palette{color.Black, color.White})
	var progressive bytes.Buffer
	require.NoError(t, jpeg.Encode(&progressive, image.NewGray(rect), nil))
	for _, tc := range []struct {
		name string
		file []byte
		want int64 // decoder bytes
	}{
		{"16-bit RGBA", pngOf(t, image.NewNRGBA64(rect)), w * h * 8},
		{"16-bit gray", pngOf(t, image.NewGray16(rect)), w * h * 2},
		{"8-bit RGBA", pngOf(t, image.NewNRGBA(rect)), w * h * 4},
		{"8-bit gray", pngOf(t, image.NewGray(rect)), w * h},
		{"palette", pngOf(t, palette), w * h},
		{"baseline gray JPEG", progressive.Bytes(), w * h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := NewBudget(0)
			bt := Limits{Budget: budget}.Begin()
			// The decode itself reserves decoder bytes + RGB; only the
			// RGB copy stays reserved after it.
			limited := Limits{MaxDecodedBytes: tc.want + w*h*3 - 1}.Begin()
			_, err := limited.Decode(tc.file)
			require.ErrorIs(t, err, ErrInvalid, "one byte short of what the decode needs")
			assert.Contains(t, err.Error(), "--max-request-image-memory")
			img, err := bt.Decode(tc.file)
			require.NoError(t, err)
			assert.Len(t, img.RGB, w*h*3)
			assert.EqualValues(t, w*h*3, bt.Held())
			assert.EqualValues(t, w*h*3, budget.InUse())
			bt.Release()
			bt.Release() // twice is harmless
			assert.Zero(t, budget.InUse())
		})
	}
}

func TestJPEGProgressiveCountsCoefficients(t *testing.T) {
	cfg := image.Config{Width: 16, Height: 16, ColorModel: color.YCbCrModel}
	assert.EqualValues(t, 16*16*3, DecoderBytes(cfg, false))
	assert.EqualValues(t, 16*16*3+16*16*3*4, DecoderBytes(cfg, true))
	sof2 := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc2, 0, 2}
	assert.True(t, jpegProgressive(sof2))
	sof0 := []byte{0xff, 0xd8, 0xff, 0xc0, 0, 2}
	assert.False(t, jpegProgressive(sof0))
}

// Past the daemon's budget a decode is refused as a busy server (503,
// retryable), not as the client's fault; what was released is available again.
func TestBudgetAcrossRequests(t *testing.T) {
	file := pngOf(t, image.NewNRGBA64(image.Rect(0, 0, 32, 32))) // 8 KiB decoder + 3 KiB RGB
	budget := NewBudget(16 << 10)
	l := Limits{Budget: budget}
	first := l.Begin()
	_, err := first.Decode(file)
	require.NoError(t, err)
	assert.EqualValues(t, 3<<10, budget.InUse(), "a decoded picture waiting for the engine holds its RGB bytes")

	second := l.Begin()
	_, err = second.Decode(file)
	require.NoError(t, err, "3 KiB held + 11 KiB for the decode fit in 16 KiB")
	_, err = second.Decode(file)
	require.ErrorIs(t, err, ErrBusy, "6 KiB held + 11 KiB do not")
	assert.ErrorIs(t, err, npu.ErrQueueFull)
	assert.False(t, errors.Is(err, ErrInvalid))
	assert.EqualValues(t, 6<<10, budget.InUse(), "a refused decode holds nothing")

	first.Release()
	second.Release()
	assert.Zero(t, budget.InUse())
	_, err = second.Decode(file)
	assert.ErrorIs(t, err, ErrInvalid, "a released batch takes nothing more")
}

func TestBudgetReturnsMemoryAfterLargeDecodes(t *testing.T) {
	returned := make(chan struct{}, 1)
	budget := NewBudget(0)
	budget.ReturnAfter = 8 << 10
	budget.ReturnMemory = func() { returned <- struct{}{} }
	small := Limits{Budget: budget}.Begin()
	_, err := small.Decode(pngOf(t, image.NewGray(image.Rect(0, 0, 8, 8))))
	require.NoError(t, err)
	select {
	case <-returned:
		t.Fatal("a small decode does not return memory")
	default:
	}
	_, err = small.Decode(pngOf(t, image.NewNRGBA64(image.Rect(0, 0, 32, 32))))
	require.NoError(t, err)
	<-returned // 8 KiB of decoder buffers freed
}

// BenchmarkDecodeCountsWhatItAllocates decodes pictures of each decoded
// depth and reports, beside the allocations the benchmark measures, the
// bytes the budget reserved for the decode (counted-B/op): the model
// the accounting relies on. Run: go test -run '^$' -bench DecodeCounts -benchmem ./wire/imagein
func BenchmarkDecodeCountsWhatItAllocates(b *testing.B) {
	rect := image.Rect(0, 0, 1024, 1024)
	palette := image.NewPaletted(rect, color.Palette{color.Black, color.White})
	for _, tc := range []struct {
		name string
		img  image.Image
	}{
		{"16-bit-RGBA", image.NewNRGBA64(rect)},
		{"8-bit-RGBA", image.NewNRGBA(rect)},
		{"8-bit-gray", image.NewGray(rect)},
		{"palette", palette},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var file bytes.Buffer
			require.NoError(b, png.Encode(&file, tc.img))
			cfg, err := png.DecodeConfig(bytes.NewReader(file.Bytes()))
			require.NoError(b, err)
			counted := DecoderBytes(cfg, false) + 1024*1024*3
			b.ReportAllocs()
			for b.Loop() {
				bt := Limits{}.Begin()
				if _, err := bt.Decode(file.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(counted), "counted-B/op")
		})
	}
}
