package audioin_test

import (
	"testing"

	"github.com/npud/npud/wire/audioin"
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
