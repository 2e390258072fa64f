package audioin_test

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// FuzzDecode feeds the built-in decoders (WAV, FLAC, MP3, Ogg Vorbis) and
// the MP4 index mover whatever the fuzzer makes of real files: nothing
// panics, and what decodes stays within the limits and in range.
func FuzzDecode(f *testing.F) {
	tone := wavtest.Tone(440, 0.5, 0.2, 8000)
	f.Add(wavtest.Encode([][]float64{tone, tone}, 8000, wavtest.PCM16))
	f.Add(wavtest.Encode([][]float64{tone}, 8000, wavtest.Float32))
	// Seeds from Debian's encoders, where they are installed.
	for _, format := range []string{"flac", "mp3", "ogg-vorbis", "m4a-moov-last"} {
		tool := map[string]string{"flac": "sox", "mp3": "lame"}[format]
		if tool == "" {
			tool = "ffmpeg"
		}
		if _, err := exec.LookPath(tool); err == nil {
			f.Add(audiotest.Tone(f, format, 440, 0.5, 0.2, 8000, 2))
		}
	}
	const maxDuration = 5 * time.Second
	limits := audioin.Limits{MaxBytes: 1 << 20, MaxDuration: maxDuration}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		clip, err := audioin.Decode(data, limits)
		if !bytes.Equal(in, data) {
			t.Fatal("Decode changed its input")
		}
		if err == nil {
			if len(clip.Samples) == 0 || len(clip.Samples) > int(maxDuration.Seconds()*audioin.SampleRate)+audioin.SampleRate/10 {
				t.Fatalf("%d samples decoded within a %s limit", len(clip.Samples), maxDuration)
			}
			for i, v := range clip.Samples {
				if !(v >= -1 && v <= 1) {
					t.Fatalf("sample %d is %v", i, v)
				}
			}
		}
		moved, err := audioin.MoovFirst(data)
		if err == nil && len(moved) != len(data) {
			t.Fatalf("the MP4 rearrangement made %d bytes of %d", len(moved), len(data))
		}
	})
}
