//go:build cgo

package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// Issue 30: a transcription crosses the process boundary like an
// embedding: with --isolation process the audio goes to the model's worker
// and the transcript comes back.
func TestTranscriptionInAWorker(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.Isolation = "sim", "process"
	srv := daemontest.Start(t, cfg, nil)
	resp, raw := postAudio(t, daemontest.NewClient(t, srv.URL), "/v1/audio/transcriptions",
		wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1.5, 22050)}, 22050, wavtest.PCM16), "model", "sim", "response_format", "text")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Regexp(t, `^1\.50 seconds, level 0\.35[0-9], pitch 44[01] Hz\.\n$`, string(raw))
	h := daemontest.Health(t, daemontest.NewClient(t, srv.URL).HTTP, srv.URL)
	assert.EqualValues(t, 0, h["worker_restarts"])
}

// A streamed transcription through a worker: the segment callback does not
// cross the process boundary (gob leaves func fields out), so the worker's
// segments come back with the transcript and go out as deltas then, the
// stream as complete as in process.
func TestStreamedTranscriptionInAWorker(t *testing.T) {
	cfg := daemontest.Defaults(t)
	cfg.Engine, cfg.Isolation = "sim", "process"
	srv := daemontest.Start(t, cfg, nil)
	resp, raw := postAudio(t, daemontest.NewClient(t, srv.URL), "/v1/audio/transcriptions",
		wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 65, 16000)}, 16000, wavtest.PCM16), "model", "sim", "stream", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.Regexp(t, `^data: \{"type":"transcript.text.delta","delta":"30.00 seconds[^"]*"\}\n\n`+
		`data: \{"type":"transcript.text.delta","delta":" 30.00 seconds[^"]*"\}\n\n`+
		`data: \{"type":"transcript.text.delta","delta":" 5.00 seconds[^"]*"\}\n\n`+
		`data: \{"type":"transcript.text.done","text":"30.00 seconds[^"]*5.00 seconds[^"]*","usage":\{"type":"duration","seconds":65\}\}\n\n$`, string(raw))
}
