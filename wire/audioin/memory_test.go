package audioin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
	"github.com/npud/npud/wire/membudget"
)

// Issue 38 item 5: decoded audio is counted against a memory budget, as
// decoded images are: what the 16 kHz clip holds stays reserved until the
// transcription is done with it (Release), what the decode needed on top
// (the decoder's buffers, the arrays the output grew from) is counted
// while it runs, and past the budget the decode stops with ErrBusy (a 503
// the client may retry), giving back all it held. The FLAC is the
// issue's kind of file: a small upload (96 kHz, 8 channels) that decodes
// to far more than it weighs.
func TestDecodedAudioIsCountedAgainstTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    func(t *testing.T) []byte
		seconds float64
	}{
		{"WAV", func(*testing.T) []byte {
			return wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 30, 16000)}, 16000, wavtest.PCM16)
		}, 30},
		{"FLAC, 96 kHz, 8 channels", func(t *testing.T) []byte { return audiotest.Tone(t, "flac", 440, 0.5, 5, 96000, 8) }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file(t)
			clipBytes := int64(tc.seconds * audioin.SampleRate * 4)

			budget := membudget.New(64 << 20)
			clip, err := audioin.Decode(file, audioin.Limits{Memory: budget})
			require.NoError(t, err)
			assert.InDelta(t, tc.seconds, clip.Duration().Seconds(), 0.01)
			held := budget.InUse()
			assert.EqualValues(t, 4*cap(clip.Samples), held, "what the clip's samples hold stays counted, and only that: the decoder's buffers went back")
			clip.Release()
			clip.Release() // twice is harmless
			assert.Zero(t, budget.InUse(), "released with the transcription")

			// A budget that holds the clip but not what decoding it takes
			// on top, and one far smaller: both refuse, and keep nothing.
			for _, total := range []int64{clipBytes, clipBytes / 4} {
				budget := membudget.New(total)
				_, err := audioin.Decode(file, audioin.Limits{Memory: budget})
				require.ErrorIs(t, err, audioin.ErrBusy, "a budget of %d bytes", total)
				assert.NotErrorIs(t, err, audioin.ErrInvalid, "the server is busy: not the file's fault")
				assert.Zero(t, budget.InUse())
			}
		})
	}
}
