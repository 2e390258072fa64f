package openaiapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin/audiotest"
)

// Issue 30: a WAV of espeak-ng's speech goes through the official OpenAI
// Python client to the simulated engine in every response format, as a
// translation and streamed; a format npud does not write is a 400 the
// client reads.
func TestOpenAIPythonTranscription(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	path, clip := audiotest.SpeechClip(t)
	srv := startSim(t, nil, nil)
	r := daemontest.PythonTranscription(t, srv.URL, "sim", path, clip.Duration().Seconds())
	h := parseHeard(t, r["json"].(string))
	assert.InDelta(t, clip.Duration().Seconds(), h.seconds, 0.01)
	assert.Greater(t, h.level, 0.02, "speech is heard, not silence")
}
