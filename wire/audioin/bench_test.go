package audioin_test

import (
	"context"
	"testing"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// BenchmarkDecodeMinute is the decode cost of one minute of audio, as
// clients commonly send it: one op is one minute.
func BenchmarkDecodeMinute(b *testing.B) {
	for _, tc := range []struct {
		name string
		rate int
		ch   int
	}{{"16k-mono", 16000, 1}, {"44.1k-stereo", 44100, 2}, {"48k-stereo", 48000, 2}} {
		tone := wavtest.Tone(440, 0.5, 60, tc.rate)
		chans := make([][]float64, tc.ch)
		for i := range chans {
			chans[i] = tone
		}
		wav := wavtest.Encode(chans, tc.rate, wavtest.PCM16)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(wav)))
			for b.Loop() {
				if _, err := audioin.Decode(wav, audioin.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeMinuteCompressed is the same minute (44.1 kHz stereo;
// Opus is always 48 kHz) in each compressed format, made by Debian's
// encoders: the Go decoders, and ffmpeg (a process per file) for the
// rest. One op is one minute.
func BenchmarkDecodeMinuteCompressed(b *testing.B) {
	ext, err := audioin.FindExternal("")
	if err != nil || ext == nil {
		b.Skip("ffmpeg is not installed")
	}
	for _, format := range []string{"flac", "mp3", "ogg-vorbis", "ogg-opus", "webm", "m4a"} {
		data := audiotest.Tone(b, format, 440, 0.5, 60, 44100, 2)
		b.Run(format, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := audioin.DecodeContext(context.Background(), data, audioin.Limits{}, ext); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResampleMinute is the resampler alone on a minute of mono
// audio, whole and streamed a block at a time (as the compressed formats
// use it).
func BenchmarkResampleMinute(b *testing.B) {
	for _, rate := range []int{44100, 48000, 22050, 8000} {
		x := f32(wavtest.Tone(440, 0.5, 60, rate))
		b.Run("whole-"+itoa(rate), func(b *testing.B) {
			for b.Loop() {
				audioin.Resample(x, rate, audioin.SampleRate)
			}
		})
		b.Run("streamed-"+itoa(rate), func(b *testing.B) {
			for b.Loop() {
				audioin.ResampleStreamed(x, rate, func() int { return 4096 })
			}
		})
	}
}

func itoa(n int) string {
	return map[int]string{44100: "44.1k", 48000: "48k", 22050: "22.05k", 8000: "8k"}[n]
}
