package sim

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

func tone(freq, amp, seconds float64) []float32 {
	x := make([]float32, int(seconds*npu.AudioSampleRate))
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/npu.AudioSampleRate))
	}
	return x
}

func TestHear(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float32
		want    Heard
	}{
		{"440 Hz", tone(440, 0.5, 1), Heard{Seconds: 1, RMS: 0.5 / math.Sqrt2, PitchHz: 440}},
		{"110 Hz quiet", tone(110, 0.01, 2), Heard{Seconds: 2, RMS: 0.01 / math.Sqrt2, PitchHz: 110}},
		{"3 kHz", tone(3000, 0.9, 0.5), Heard{Seconds: 0.5, RMS: 0.9 / math.Sqrt2, PitchHz: 3000}},
		{"silence", make([]float32, 8000), Heard{Seconds: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hear(tc.samples)
			assert.InDelta(t, tc.want.Seconds, got.Seconds, 1e-9)
			assert.InDelta(t, tc.want.RMS, got.RMS, 1e-3)
			assert.InDelta(t, tc.want.PitchHz, got.PitchHz, tc.want.PitchHz*0.005+1e-9)
		})
	}
	assert.Equal(t, "0.50 seconds, silence.", Hear(make([]float32, 8000)).Words())
}

func TestTranscribeWindows(t *testing.T) {
	e := New(Config{})
	samples := append(tone(440, 0.5, 30), make([]float32, 5*npu.AudioSampleRate)...)
	out, err := e.Transcribe(context.Background(), &npu.TranscribeRequest{Model: ModelID, Samples: samples, Task: npu.TaskTranslate, Language: "de"})
	require.NoError(t, err)
	assert.Equal(t, "en", out.Language, "Whisper translates into English")
	require.Len(t, out.Segments, 2)
	assert.Equal(t, "Translated: 30.00 seconds, level 0.354, pitch 440 Hz.", out.Segments[0].Text)
	assert.Equal(t, npu.Segment{Start: 30, End: 35, Text: "5.00 seconds, silence."}, out.Segments[1])
	assert.Equal(t, out.Segments[0].Text+" "+out.Segments[1].Text, out.Text)

	_, err = e.Transcribe(context.Background(), &npu.TranscribeRequest{Model: ModelID})
	var invalid *npu.InvalidRequestError
	require.ErrorAs(t, err, &invalid)
}
