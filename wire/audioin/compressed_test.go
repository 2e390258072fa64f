package audioin_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/audiotest"
)

// ffmpeg is the external decoder, as the daemon finds it on PATH.
func ffmpeg(t *testing.T) *audioin.External {
	t.Helper()
	audiotest.Require(t, "ffmpeg")
	ext, err := audioin.FindExternal("")
	require.NoError(t, err)
	require.NotNil(t, ext)
	return ext
}

// Files made by Debian's sox, ffmpeg and lame (the Makefile installs
// them): a 440 Hz tone of peak 0.5, 2 s, 44.1 kHz stereo, in every format
// clients send, decoded to 16 kHz mono with its length, level and pitch
// kept. Lossy codecs move the level a little, and MP3 adds the encoder's
// delay and padding to the length.
func TestDecodeCompressed(t *testing.T) {
	ext := ffmpeg(t)
	for _, tc := range []struct {
		format   string
		external bool
		lengthTo float64
		levelTo  float64
	}{
		{"flac", false, 0.001, 0.002},
		{"mp3", false, 0.08, 0.03}, // lame's joint stereo comes back 5% quieter, in ffmpeg too
		{"ogg-vorbis", false, 0.01, 0.02},
		{"ogg-opus", true, 0.01, 0.02},
		{"webm", true, 0.01, 0.02},
		{"m4a", true, 0.06, 0.02},
		{"m4a-moov-last", true, 0.06, 0.02},
		{"aiff", true, 0.001, 0.002},
	} {
		t.Run(tc.format, func(t *testing.T) {
			data := audiotest.Tone(t, tc.format, 440, 0.5, 2, 44100, 2)
			clip, err := audioin.DecodeContext(context.Background(), data, audioin.Limits{}, ext)
			require.NoError(t, err)
			assert.InDelta(t, 2, clip.Duration().Seconds(), tc.lengthTo)
			assert.InDelta(t, 0.5/math.Sqrt2, rms(clip.Samples), tc.levelTo)
			assert.Greater(t, power(clip.Samples, 440), 1000*power(clip.Samples, 880))
			if !tc.external {
				assert.Equal(t, 44100, clip.SourceRate)
				assert.Equal(t, 2, clip.SourceChannels)
				// The pure-Go decoders need no external one.
				alone, err := audioin.Decode(data, audioin.Limits{})
				require.NoError(t, err)
				assert.Equal(t, clip.Samples, alone.Samples)
				return
			}
			_, err = audioin.Decode(data, audioin.Limits{})
			require.ErrorIs(t, err, audioin.ErrInvalid)
			assert.Contains(t, err.Error(), "without an external decoder: it decodes WAV")
			assert.Contains(t, err.Error(), "need ffmpeg")
		})
	}
}

// An M4A whose index comes after the audio (ffmpeg's default, and many
// recorders') is decoded from the pipe: npud moves the index first. A
// long one shows it: a short file fits in ffmpeg's read buffer anyway.
func TestDecodeM4AIndexLast(t *testing.T) {
	ext := ffmpeg(t)
	data := audiotest.Tone(t, "m4a-moov-last", 440, 0.5, 40, 16000, 1)
	clip, err := audioin.DecodeContext(context.Background(), data, audioin.Limits{}, ext)
	require.NoError(t, err)
	assert.InDelta(t, 40, clip.Duration().Seconds(), 0.06)
	assert.InDelta(t, 0.5/math.Sqrt2, rms(clip.Samples), 0.02)
	assert.Greater(t, power(clip.Samples, 440), 1000*power(clip.Samples, 880))
}

// Channels are averaged by every decoder: a tone on the left only is half
// as loud.
func TestDecodeCompressedChannels(t *testing.T) {
	ext := ffmpeg(t)
	for _, format := range []string{"flac", "ogg-vorbis", "mp3", "ogg-opus"} {
		t.Run(format, func(t *testing.T) {
			data := audiotest.LeftOnly(t, format, 440, 0.5, 1, 48000)
			clip, err := audioin.DecodeContext(context.Background(), data, audioin.Limits{}, ext)
			require.NoError(t, err)
			assert.InDelta(t, 0.25/math.Sqrt2, rms(clip.Samples), 0.02)
		})
	}
}

// The built-in decoders stop when the request ends, as ffmpeg is killed.
func TestBuiltInDecodersStopWithTheRequest(t *testing.T) {
	gone := errors.New("the client left")
	for _, format := range []string{"flac", "mp3", "ogg-vorbis"} {
		t.Run(format, func(t *testing.T) {
			data := audiotest.Tone(t, format, 440, 0.5, 1, 16000, 1)
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(gone)
			_, err := audioin.DecodeContext(ctx, data, audioin.Limits{}, nil)
			require.ErrorIs(t, err, gone)
			assert.NotErrorIs(t, err, audioin.ErrInvalid, "not the client's file's fault")
		})
	}
}

// A compressed file's length is checked before it is decoded where the
// header says it, and counted as it is decoded; the external decoder's
// output is bounded the same way.
func TestDecodeCompressedTooLong(t *testing.T) {
	ext := ffmpeg(t)
	for _, format := range []string{"flac", "mp3", "ogg-vorbis", "ogg-opus", "m4a"} {
		t.Run(format, func(t *testing.T) {
			data := audiotest.Tone(t, format, 440, 0.5, 3, 16000, 1)
			_, err := audioin.DecodeContext(context.Background(), data, audioin.Limits{MaxDuration: time.Second}, ext)
			require.ErrorIs(t, err, audioin.ErrTooLarge)
			require.ErrorIs(t, err, audioin.ErrInvalid)
			assert.Contains(t, err.Error(), "at most 1s is accepted")
		})
	}
}

// The streamed resampler gives the same samples as resampling the whole
// clip at once, whatever the pieces it is fed in: it holds a block of
// input, not the clip.
func TestStreamedResampleMatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rate := range []int{8000, 44100, 48000, 44099} {
		x := make([]float32, 23*rate+rate/3)
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		want := audioin.Resample(x, rate, audioin.SampleRate)
		got := audioin.ResampleStreamed(x, rate, func() int { return 1 + rng.IntN(3*rate) })
		require.Len(t, got, len(want), "at %d Hz", rate)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				t.Fatalf("at %d Hz: sample %d is %v streamed, %v whole", rate, i, got[i], want[i])
			}
		}
	}
}

// fakeDecoder is a script in the external decoder's place.
func fakeDecoder(t *testing.T, script string) *audioin.External {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ffmpeg")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o700))
	return &audioin.External{Path: path, Timeout: 10 * time.Second}
}

var opusHeader = []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead")

// The external decoder gets nothing of the daemon's environment (API keys
// in NPUD_* included), its failure is the client's 400 without its words
// (they may quote the file), its output is bounded, and it is killed when
// the request ends or its time is up.
func TestExternalDecoderIsBounded(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	t.Setenv("NPUD_API_KEYS", "sk-secret-key")
	t.Run("environment", func(t *testing.T) {
		_, err := audioin.DecodeContext(context.Background(), opusHeader, audioin.Limits{}, fakeDecoder(t, "env >&2; exit 1"))
		require.ErrorIs(t, err, audioin.ErrInvalid)
		var de *audioin.DecoderError
		require.ErrorAs(t, err, &de)
		assert.NotContains(t, de.Stderr, "sk-secret-key")
		assert.NotContains(t, de.Stderr, "NPUD_")
		assert.NotContains(t, err.Error(), "PWD", "the decoder's words stay out of the message")
	})
	t.Run("output", func(t *testing.T) {
		_, err := audioin.DecodeContext(context.Background(), opusHeader, audioin.Limits{MaxDuration: time.Second},
			fakeDecoder(t, "exec cat /dev/zero"))
		require.ErrorIs(t, err, audioin.ErrTooLarge)
	})
	t.Run("stdin", func(t *testing.T) {
		// What the decoder reads is the file, whole.
		clip, err := audioin.DecodeContext(context.Background(), opusHeader, audioin.Limits{},
			fakeDecoder(t, "exec cat"))
		require.NoError(t, err)
		assert.Len(t, clip.Samples, len(opusHeader)/4)
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		gone := errors.New("the client left")
		done := make(chan error, 1)
		go func() {
			_, err := audioin.DecodeContext(ctx, opusHeader, audioin.Limits{}, fakeDecoder(t, "exec sleep 60"))
			done <- err
		}()
		cancel(gone)
		select {
		case err := <-done:
			require.ErrorIs(t, err, gone)
		case <-time.After(20 * time.Second):
			t.Fatal("the decoder was not killed with the request")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ext := fakeDecoder(t, "exec sleep 60")
		ext.Timeout = 100 * time.Millisecond
		_, err := audioin.DecodeContext(context.Background(), opusHeader, audioin.Limits{}, ext)
		require.ErrorIs(t, err, audioin.ErrInvalid)
		assert.Contains(t, err.Error(), "took longer than 100ms")
	})
}

func TestFindExternal(t *testing.T) {
	ext, err := audioin.FindExternal("none")
	require.NoError(t, err)
	assert.Nil(t, ext)
	_, err = audioin.FindExternal("/nonexistent/ffmpeg")
	require.Error(t, err)
	t.Setenv("PATH", t.TempDir())
	ext, err = audioin.FindExternal("")
	require.NoError(t, err)
	assert.Nil(t, ext, "without ffmpeg on PATH there is no external decoder, and no error")
}
