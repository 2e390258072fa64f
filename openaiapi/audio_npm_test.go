package openaiapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// Issue 30: the official OpenAI JavaScript client uploads a WAV (a tone at
// 44.1 kHz stereo) and reads every shape it asks for, streamed events
// included; an MP3 (made by lame) is heard as the WAV is; a file npud
// cannot decode is a 400 it can read, listing what npud decodes.
func TestOpenAIJSTranscription(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, nil, nil)
	tone := wavtest.Tone(440, 0.5, 2, 44100)
	path := filepath.Join(t.TempDir(), "tone.wav")
	require.NoError(t, os.WriteFile(path, wavtest.Encode([][]float64{tone, tone}, 44100, wavtest.PCM16), 0o600))
	mp3Path := filepath.Join(t.TempDir(), "tone.mp3")
	require.NoError(t, os.WriteFile(mp3Path, audiotest.Tone(t, "mp3", 440, 0.5, 2, 44100, 2), 0o600))
	r := daemontest.RunJS(t, "openai", "openai_audio.mjs", srv.URL, path, mp3Path)

	h := parseHeard(t, r["text"].(string))
	assert.InDelta(t, 2, h.seconds, 0.01)
	assert.InDelta(t, 0.354, h.level, 0.004)
	assert.InDelta(t, 440, h.pitch, 2)
	verbose := r["verbose"].(map[string]any)
	assert.InDelta(t, 2, verbose["duration"], 0.001)
	assert.Equal(t, "en", verbose["language"])
	assert.Len(t, verbose["segments"], 1)
	assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:02,000\n2.00 seconds, level 0.35[0-9], pitch 44[01] Hz\.\n\n$`, r["srt"])
	assert.Regexp(t, `^Translated: 2.00 seconds`, r["translation"])
	events := r["events"].([]any)
	require.Len(t, events, 2, "%v", events)
	delta, done := events[0].(map[string]any), events[1].(map[string]any)
	assert.Equal(t, "transcript.text.delta", delta["type"])
	assert.Equal(t, "transcript.text.done", done["type"])
	assert.Equal(t, delta["delta"], done["text"])
	assert.Equal(t, r["text"], done["text"])
	assert.Equal(t, map[string]any{"type": "duration", "seconds": float64(2)}, done["usage"])
	h3 := parseHeard(t, r["mp3"].(string))
	assert.InDelta(t, 2, h3.seconds, 0.08)
	assert.InDelta(t, 440, h3.pitch, 3)
	refused := r["refused"].(map[string]any)
	assert.EqualValues(t, 400, refused["status"])
	assert.Equal(t, "file", refused["param"])
	assert.Contains(t, refused["message"], "npud cannot decode this file (not a format npud recognises): it decodes WAV")
	assert.Contains(t, refused["message"], "FLAC, MP3, Ogg Vorbis")
}
