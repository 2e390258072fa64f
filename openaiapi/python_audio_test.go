package openaiapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin"
)

// Issue 30: a WAV of espeak-ng's speech goes through the official OpenAI
// Python client to the simulated engine in every response format, as a
// translation and streamed; a format npud does not write is a 400 the
// client reads.
func TestOpenAIPythonTranscription(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	path, clip := espeakWAV(t)
	srv := startSim(t, nil, nil)
	r := daemontest.RunPython(t, "openai_audio.py", srv.URL, "sim", path)

	seconds := clip.Duration().Seconds()
	h := parseHeard(t, r["json"].(string))
	assert.InDelta(t, seconds, h.seconds, 0.01)
	assert.Greater(t, h.level, 0.02, "speech is heard, not silence")
	verbose := r["verbose"].(map[string]any)
	assert.InDelta(t, seconds, verbose["duration"], 0.001)
	require.Len(t, verbose["segments"], 1)
	assert.InDelta(t, seconds, verbose["segments"].([]any)[0].(map[string]any)["end"], 0.02)
	assert.Equal(t, r["json"].(string)+"\n", r["text"])
	assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:0[0-9],[0-9]{3}\n[0-9.]+ seconds, [^\n]+\n\n$`, r["srt"])
	assert.True(t, strings.HasPrefix(r["vtt"].(string), "WEBVTT\n\n00:00:00.000 --> "), "%q", r["vtt"])
	assert.True(t, strings.HasPrefix(r["translation"].(string), "Translated: "), "%q", r["translation"])
	events := r["events"].([]any)
	require.NotEmpty(t, events)
	assert.Equal(t, "transcript.text.done", events[len(events)-1])
	assert.Equal(t, r["json"], r["stream_text"])
	assert.Equal(t, r["json"], r["deltas"])
	refused := r["refused"].(map[string]any)
	assert.EqualValues(t, 400, refused["status"])
	assert.Equal(t, "response_format", refused["param"])
}

// espeakWAV is speech made by Debian's espeak-ng (make test installs it):
// a real WAV from another program, 22.05 kHz 16-bit mono.
func espeakWAV(t *testing.T) (string, audioin.Clip) {
	t.Helper()
	espeak, err := exec.LookPath("espeak-ng")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("espeak-ng is missing: make test installs it")
		}
		t.Skip("espeak-ng is not installed (make test installs it)")
	}
	path := filepath.Join(t.TempDir(), "speech.wav")
	out, err := exec.CommandContext(t.Context(), espeak, "-w", path, "The NPU transcribes speech on this machine.").CombinedOutput()
	require.NoError(t, err, "%s", out)
	wav, err := os.ReadFile(path)
	require.NoError(t, err)
	clip, err := audioin.Decode(wav, audioin.Limits{})
	require.NoError(t, err)
	return path, clip
}
