package openaiapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// Issue 38 item 5: decoded audio is held against --max-audio-memory, as
// images are against --max-image-memory. Each transcription gives its
// clip's memory back when it is done (ten in a row fit a budget that
// holds three), and an upload that would decode past the budget is a 503
// with Retry-After, the server's load and not the file's fault, after
// which the budget is whole again.
func TestTranscriptionAudioMemoryBudget(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, func(c *daemon.Config) { c.MaxAudioMemory = 4 << 20 }, nil)
	hc := &http.Client{}
	wav := func(seconds float64) (body []byte, contentType string) {
		return audioForm(t, "file", string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, seconds, 16000)}, 16000, wavtest.PCM16)), "model", "sim")
	}
	short, shortType := wav(10) // 640 KB of samples
	for range 10 {
		resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", short, shortType)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", e)
	}

	long, longType := wav(60) // 3.84 MB of samples, and the decode's buffers on top
	resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", long, longType)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%+v", e)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, "server_error", e.Error.Type)
	require.NotNil(t, e.Error.Code)
	assert.Equal(t, "queue_full", *e.Error.Code)
	assert.Contains(t, e.Error.Message, "max-audio-memory")

	resp, e = postForm(t, hc, srv.URL+"/v1/audio/transcriptions", short, shortType)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the refused decode gave back what it held: %+v", e)
}
