package audioin_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// rms is the root mean square of x, away from the ends.
func rms(x []float32) float64 {
	x = x[len(x)/10 : len(x)-len(x)/10]
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// power is the Goertzel power of x at freq Hz (16 kHz), normalised so a
// full-scale sine gives about 0.25.
func power(x []float32, freq float64) float64 {
	w := 2 * math.Pi * freq / audioin.SampleRate
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range x {
		s0 := float64(v) + c*s1 - s2
		s2, s1 = s1, s0
	}
	p := s1*s1 + s2*s2 - c*s1*s2
	n := float64(len(x))
	return p / (n * n)
}

func TestDecodeEncodings(t *testing.T) {
	for _, enc := range []wavtest.Encoding{wavtest.PCM8, wavtest.PCM16, wavtest.PCM24, wavtest.PCM32, wavtest.Float32, wavtest.Float64,
		{Bits: 16, Extensible: true}, {Float: true, Bits: 32, Extensible: true}} {
		// 44099 Hz has too many phases for the polyphase table: the direct path.
		for _, rate := range []int{8000, 16000, 22050, 44100, 48000, 44099} {
			t.Run(fmt.Sprintf("%+v/%d", enc, rate), func(t *testing.T) {
				wav := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, rate)}, rate, enc)
				clip, err := audioin.Decode(wav, audioin.Limits{})
				require.NoError(t, err)
				assert.Equal(t, rate, clip.SourceRate)
				assert.InDelta(t, audioin.SampleRate, len(clip.Samples), 1)
				assert.InDelta(t, time.Second, clip.Duration(), float64(time.Millisecond))
				// A 0.5-peak sine has an RMS of 0.354, whatever the encoding and rate.
				assert.InDelta(t, 0.5/math.Sqrt2, rms(clip.Samples), 0.01)
				assert.Greater(t, power(clip.Samples, 440), 100*power(clip.Samples, 880))
			})
		}
	}
}

// Channels are averaged: a tone on the left and silence on the right is
// half as loud; the same tone on both is as loud; opposite phases cancel.
func TestDecodeChannels(t *testing.T) {
	tone := wavtest.Tone(300, 0.8, 0.5, 16000)
	silence := make([]float64, len(tone))
	inverted := make([]float64, len(tone))
	for i, v := range tone {
		inverted[i] = -v
	}
	for _, tc := range []struct {
		name     string
		channels [][]float64
		want     float64
	}{
		{"mono", [][]float64{tone}, 0.8 / math.Sqrt2},
		{"left only", [][]float64{tone, silence}, 0.4 / math.Sqrt2},
		{"both", [][]float64{tone, tone}, 0.8 / math.Sqrt2},
		{"opposite", [][]float64{tone, inverted}, 0},
		{"six channels, one playing", [][]float64{tone, silence, silence, silence, silence, silence}, 0.8 / 6 / math.Sqrt2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clip, err := audioin.Decode(wavtest.Encode(tc.channels, 16000, wavtest.PCM16), audioin.Limits{})
			require.NoError(t, err)
			assert.Equal(t, len(tc.channels), clip.SourceChannels)
			assert.InDelta(t, tc.want, rms(clip.Samples), 0.005)
		})
	}
}

// The resampler is band-limited: a tone under 8 kHz keeps its pitch and
// level; one above it (which dropping samples folds back into the band, a
// 12 kHz tone at 48 kHz becoming 4 kHz) is removed.
func TestResampleBandLimited(t *testing.T) {
	pass := audioin.Resample(f32(wavtest.Tone(3000, 0.5, 1, 48000)), 48000, 16000)
	assert.InDelta(t, 0.5/math.Sqrt2, rms(pass), 0.01)
	assert.Greater(t, power(pass, 3000), 1000*power(pass, 5000))

	alias := audioin.Resample(f32(wavtest.Tone(12000, 0.5, 1, 48000)), 48000, 16000)
	assert.Less(t, rms(alias), 0.005, "a 12 kHz tone must not survive at 16 kHz")
	assert.Less(t, power(alias, 4000), 1e-5, "nor fold back to 4 kHz")

	up := audioin.Resample(f32(wavtest.Tone(1000, 0.5, 1, 8000)), 8000, 16000)
	assert.Len(t, up, 16000)
	assert.InDelta(t, 0.5/math.Sqrt2, rms(up), 0.01)
	assert.Greater(t, power(up, 1000), 1000*power(up, 7000), "upsampling must not make an image at 8 kHz - 1 kHz")
}

func f32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func TestDecodeRefuses(t *testing.T) {
	good := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)
	for _, tc := range []struct {
		name   string
		data   []byte
		limits audioin.Limits
		want   string
		large  bool
	}{
		{"empty", nil, audioin.Limits{}, "cannot decode this file", false},
		{"text", []byte("hello, this is not audio"), audioin.Limits{}, "cannot decode this file (not a format npud recognises): it decodes WAV", false},
		{"flac", []byte("fLaC\x00\x00\x00\x22rest"), audioin.Limits{}, "the FLAC file could not be read", false},
		{"ogg", []byte("OggS\x00\x02rest"), audioin.Limits{}, "cannot decode Ogg without an external decoder: it decodes WAV", false},
		{"mp3", []byte("ID3\x04\x00rest"), audioin.Limits{}, "the MP3 file could not be read", false},
		{"mp3 frame", []byte{0xff, 0xfb, 0x90, 0x64}, audioin.Limits{}, "the MP3 file could not be read", false},
		{"m4a", []byte("\x00\x00\x00\x20ftypM4A "), audioin.Limits{}, "cannot decode MP4/M4A without an external decoder", false},
		{"webm", []byte("\x1a\x45\xdf\xa3rest"), audioin.Limits{}, "Opus, WebM, M4A and AAC need ffmpeg", false},
		{"too many bytes", good, audioin.Limits{MaxBytes: 1000}, "at most 1000 are accepted", true},
		{"too long", good, audioin.Limits{MaxDuration: 500 * time.Millisecond}, "at most 500ms", true},
		{"too many channels", wavtest.Encode([][]float64{{0}, {0}, {0}}, 16000, wavtest.PCM16), audioin.Limits{MaxChannels: 2}, "3 channels", false},
		{"12-bit", patch(good, 34, 12), audioin.Limits{}, "12-bit", false},
		{"mu-law", patch(good, 20, 7), audioin.Limits{}, "0x0007", false},
		{"cut fmt", good[:40], audioin.Limits{}, "cut", false},
		{"no data", good[:48], audioin.Limits{}, "no data chunk", false},
		{"rate 0", patch32(good, 24, 0), audioin.Limits{}, "sample rate 0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audioin.Decode(tc.data, tc.limits)
			require.ErrorIs(t, err, audioin.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, tc.large, errorsIs(err, audioin.ErrTooLarge))
		})
	}
}

// The fmt chunk starts at byte 20 (after RIFF, WAVE and a 12-byte LIST).
func patch(b []byte, off int, v uint16) []byte {
	c := append([]byte(nil), b...)
	c[off+12], c[off+13] = byte(v), byte(v>>8)
	return c
}

func patch32(b []byte, off int, v uint32) []byte {
	c := append([]byte(nil), b...)
	for i := range 4 {
		c[off+12+i] = byte(v >> (8 * i))
	}
	return c
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
