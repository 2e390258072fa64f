package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/audioin/wavtest"
)

func postSimAudio(t *testing.T, base, path string, wav []byte) (int, string) {
	t.Helper()
	resp, raw := postAudio(t, daemontest.NewClient(t, base), path, wav, "model", "sim")
	return resp.StatusCode, string(raw)
}

// Issue 30: the seconds of audio the engine got through, by task, and
// the real-time factor of each transcription (its engine time over the
// audio's, so at most the request's whole time over the audio's); a
// failed one counts as an engine error and adds no audio.
func TestMetricsAudioSecondsAndRealTimeFactor(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	cfg := daemontest.Defaults(t)
	srv := daemontest.Start(t, cfg, sim.New(sim.Config{HearWindow: func(_ context.Context, window int) error {
		if window == 2 {
			return &npu.EngineError{Engine: "sim", Cause: errors.New("lost")}
		}
		return nil
	}}))
	tone := func(seconds float64) []byte {
		return wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, seconds, 16000)}, 16000, wavtest.PCM16)
	}
	before := scrapeMetrics(t, srv.URL)
	assert.Zero(t, before.sum("npud_audio_seconds_total"))

	start := time.Now()
	status, body := postSimAudio(t, srv.URL, "/v1/audio/transcriptions", tone(45))
	require.Equal(t, 200, status, body)
	status, body = postSimAudio(t, srv.URL, "/v1/audio/translations", tone(2.5))
	require.Equal(t, 200, status, body)
	elapsed := time.Since(start)
	// 65 s: the third window fails.
	status, body = postSimAudio(t, srv.URL, "/v1/audio/transcriptions", tone(65))
	require.Equal(t, 500, status, body)

	m := scrapeMetrics(t, srv.URL)
	assert.Equal(t, 45.0, m.sum("npud_audio_seconds_total", "model", "sim", "task", "transcribe"))
	assert.Equal(t, 2.5, m.sum("npud_audio_seconds_total", "model", "sim", "task", "translate"))
	assert.Equal(t, 2.0, m.sum("npud_transcription_real_time_factor_count", "model", "sim", "device", "simulated"))
	rtf := m.sum("npud_transcription_real_time_factor_sum", "model", "sim", "device", "simulated")
	assert.Greater(t, rtf, 0.0)
	assert.LessOrEqual(t, rtf, elapsed.Seconds()/2.5+elapsed.Seconds()/45)
	assert.Equal(t, 1.0, m.sum("npud_engine_errors_total", "model", "sim", "device", "simulated", "kind", "engine"))
}

// postAudio posts wav as OpenAI's multipart form with fields (name,
// value, …) and returns the response with its whole body, read and closed.
//
//bodyclose:handled
func postAudio(t *testing.T, c *daemontest.Client, path string, wav []byte, fields ...string) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, err := w.CreateFormFile("file", "audio.wav")
	require.NoError(t, err)
	_, err = fw.Write(wav)
	require.NoError(t, err)
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(t, w.WriteField(fields[i], fields[i+1]))
	}
	require.NoError(t, w.Close())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.URL+path, &body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}
