package openaiapi_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/sim"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// startSimHearing serves the simulated engine with a HearWindow hook.
func startSimHearing(t *testing.T, mutate func(*daemon.Config), hear func(ctx context.Context, window int) error) *daemontest.Server {
	t.Helper()
	cfg := daemontest.Defaults(t)
	if mutate != nil {
		mutate(&cfg)
	}
	return daemontest.Start(t, cfg, sim.New(sim.Config{HearWindow: hear}))
}

// Every format clients send, made by Debian's sox, lame and ffmpeg, goes
// through openai-go to the simulated engine, which hears the tone's
// length, level and pitch: the decoders, the down-mix and the resampler
// (npud's, or ffmpeg's for the formats it decodes) all kept them.
func TestOpenAIGoTranscriptionCompressed(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	audiotest.Require(t, "ffmpeg")
	f := newSDKFixture(t, nil, nil)
	for _, format := range audiotest.Formats {
		t.Run(format, func(t *testing.T) {
			data := audiotest.Tone(t, format, 440, 0.5, 2.5, 44100, 2)
			resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
				File: openai.File(bytes.NewReader(data), "audio."+format, "application/octet-stream"), Model: "sim"})
			require.NoError(t, err)
			h := parseHeard(t, resp.Text)
			levelTo, pitchTo := 0.02, 3.0
			if format == "mp3" {
				// lame's 128 kb/s joint stereo comes back 5% quieter
				// (ffmpeg decodes it the same).
				levelTo = 0.03
			}
			assert.InDelta(t, 2.5, h.seconds, 0.08)
			assert.InDelta(t, 0.354, h.level, levelTo)
			assert.InDelta(t, 440, h.pitch, pitchTo)
		})
	}
}

// Speech made by Debian's espeak-ng, compressed as phones and browsers
// send it (MP3, Opus in WebM, AAC in M4A), is heard whole through
// openai-go: as long as the WAV it came from, and not silence.
func TestOpenAIGoTranscriptionEspeakCompressed(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	wavPath := audiotest.Speech(t)
	f := newSDKFixture(t, nil, nil)
	whole := func(data []byte, name string) heard {
		resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
			File: openai.File(bytes.NewReader(data), name, "application/octet-stream"), Model: "sim"})
		require.NoError(t, err)
		return parseHeard(t, resp.Text)
	}
	wav, err := os.ReadFile(wavPath)
	require.NoError(t, err)
	reference := whole(wav, "speech.wav")
	for _, format := range []string{"mp3", "webm", "m4a"} {
		t.Run(format, func(t *testing.T) {
			h := whole(audiotest.Convert(t, format, wavPath), "speech."+format)
			lengthTo := 0.08
			if format == "mp3" {
				// lame's encoder delay and padding: up to two 1152-sample
				// frames at espeak-ng's 22.05 kHz.
				lengthTo = 0.15
			}
			assert.InDelta(t, reference.seconds, h.seconds, lengthTo)
			assert.InDelta(t, reference.level, h.level, 0.2*reference.level)
		})
	}
}

// Without ffmpeg (--audio-decoder none) the formats it decodes are a 400
// that says what this npud decodes; those npud decodes itself still work.
func TestTranscriptionWithoutExternalDecoder(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, func(c *daemon.Config) { c.AudioDecoder = "none" }, nil)
	hc := &http.Client{}
	opus := audiotest.Tone(t, "ogg-opus", 440, 0.5, 1, 48000, 1)
	body, ct := audioForm(t, "file", string(opus), "model", "sim")
	resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "file", *e.Error.Param)
	assert.Equal(t, "invalid_value", *e.Error.Code)
	assert.Contains(t, e.Error.Message, "npud cannot decode Ogg Opus without an external decoder: it decodes WAV")
	assert.Contains(t, e.Error.Message, "FLAC, MP3, Ogg Vorbis (Opus, WebM, M4A and AAC need ffmpeg: --audio-decoder)")

	flac := audiotest.Tone(t, "flac", 440, 0.5, 1, 48000, 1)
	body, ct = audioForm(t, "file", string(flac), "model", "sim")
	resp, e = postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", e)
}

// Uploads are decoded at most --max-audio-decodes at once: past that a
// real 503 with Retry-After, at once; the decoder (a script in ffmpeg's
// place that holds until the test lets it go) is then free again.
func TestTranscriptionDecodesAreBounded(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	script := filepath.Join(dir, "ffmpeg")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ntouch "+started+"\nwhile [ ! -e "+release+" ]; do sleep 0.01; done\nexec cat\n"), 0o700))
	srv := startSim(t, func(c *daemon.Config) { c.AudioDecoder, c.MaxAudioDecodes = script, 1 }, nil)
	hc := &http.Client{}
	// What the script passes on is the file itself, read as float samples.
	opus := append([]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead"), make([]byte, 64000)...)
	body, ct := audioForm(t, "file", string(opus), "model", "sim")
	first := make(chan int, 1)
	go func() {
		resp, err := daemontest.Post(t.Context(), hc, srv.URL+"/v1/audio/transcriptions", ct, bytes.NewReader(body))
		if err != nil {
			first <- 0
			return
		}
		_ = resp.Body.Close()
		first <- resp.StatusCode
	}()
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o600) })
	waitFor(t, func() bool { _, err := os.Stat(started); return err == nil })

	// Refused at once: without the bound it would wait for the decoder.
	resp, e := postForm(t, &http.Client{Timeout: 10 * time.Second}, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%+v", e)
	retryAfter(t, resp)
	assert.Equal(t, "queue_full", *e.Error.Code)
	assert.Contains(t, e.Error.Message, "max-audio-decodes")

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	assert.Equal(t, http.StatusOK, <-first)
	resp, e = postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", e)
}

// stream=true through openai-go's streaming transcription API: a
// transcript.text.delta per 30-second window, each sent as the engine
// finishes its window (the engine is held before the second until the
// client has the first), then transcript.text.done with the whole text
// and the usage.
func TestOpenAIGoTranscriptionStream(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	gotFirst := make(chan struct{})
	srv := startSimHearing(t, nil, func(ctx context.Context, window int) error {
		if window == 1 {
			select {
			case <-gotFirst:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	f := sdkFixtureFor(t, srv)
	wav := wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 65, 16000)}, 16000, wavtest.PCM16)
	stream := f.client.Audio.Transcriptions.NewStreaming(sdkContext(t), openai.AudioTranscriptionNewParams{
		File: wavFile(wav), Model: "sim"})
	defer stream.Close()
	var deltas []string
	var done openai.TranscriptionTextDoneEvent
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "transcript.text.delta":
			deltas = append(deltas, ev.AsTranscriptTextDelta().Delta)
			if len(deltas) == 1 {
				close(gotFirst)
			}
		case "transcript.text.done":
			done = ev.AsTranscriptTextDone()
		default:
			t.Fatalf("unexpected event %q", ev.Type)
		}
	}
	require.NoError(t, stream.Err())
	require.Len(t, deltas, 3)
	assert.InDelta(t, 30, parseHeard(t, deltas[0]).seconds, 0.01)
	assert.InDelta(t, 5, parseHeard(t, deltas[2]).seconds, 0.01)
	assert.Equal(t, strings.Join(deltas, ""), done.Text)
	assert.Equal(t, 3, len(audiotest.HeardWords.FindAllString(done.Text, -1)))
	assert.Contains(t, done.RawJSON(), `"usage":{"type":"duration","seconds":65}`)
}

// A failure after the first event is an error event and [DONE], which
// openai-go reports as the stream's error; before it, a real HTTP error.
func TestTranscriptionStreamErrors(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSimHearing(t, nil, func(_ context.Context, window int) error {
		if window == 1 {
			return &npu.EngineError{Engine: "sim", Cause: errors.New("the device was lost")}
		}
		return nil
	})
	hc := &http.Client{}
	wav := string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 40, 16000)}, 16000, wavtest.PCM16))
	body, ct := audioForm(t, "file", wav, "model", "sim", "stream", "true")
	resp, err := daemontest.Post(t.Context(), hc, srv.URL+"/v1/audio/transcriptions", ct, bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	require.Len(t, lines, 3, "%q", lines)
	assert.True(t, strings.HasPrefix(lines[0], `data: {"type":"transcript.text.delta","delta":"30.00 seconds, level 0.35`), lines[0])
	assert.Regexp(t, `^data: \{"error":\{"message":"[^"]*the device was lost","type":"server_error","param":null,"code":"engine_error"\}\}$`, lines[1])
	assert.Equal(t, "data: [DONE]", lines[2])

	f := sdkFixtureFor(t, srv)
	stream := f.client.Audio.Transcriptions.NewStreaming(sdkContext(t), openai.AudioTranscriptionNewParams{
		File: wavFile([]byte(wav)), Model: "sim"})
	n := 0
	for stream.Next() {
		n++
	}
	require.Error(t, stream.Err())
	assert.Contains(t, stream.Err().Error(), "the device was lost")
	assert.Equal(t, 1, n, "the delta before the failure")

	// Before any event: the HTTP status.
	body, ct = audioForm(t, "file", wav, "model", "nope", "stream", "true")
	resp2, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusNotFound, resp2.StatusCode)
	assert.Equal(t, "model_not_found", *e.Error.Code)
}

// Transcriptions alone are bounded as generations are: --sim-slots run
// at once (the OpenVINO engine has one slot), --max-queue wait, and the
// next is a real 503 queue_full with Retry-After at once; the ones held
// then finish.
func TestTranscriptionJobsAreBoundedAndQueued(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	var (
		mu            sync.Mutex
		running, most int
		release       = make(chan struct{})
	)
	// Four decodes at once: the default (one per CPU) would refuse the
	// third upload on a two-core machine whenever the three decode together.
	srv := startSimHearing(t, func(c *daemon.Config) { c.SimSlots, c.MaxQueue, c.MaxAudioDecodes = 2, 1, 4 }, func(ctx context.Context, window int) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	hc := &http.Client{}
	body, ct := audioForm(t, "file", string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)), "model", "sim")
	statuses := make(chan int, 3)
	for range 3 {
		go func() {
			resp, err := daemontest.Post(t.Context(), hc, srv.URL+"/v1/audio/transcriptions", ct, bytes.NewReader(body))
			if err != nil {
				statuses <- 0
				return
			}
			_ = resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	// Two on the engine, one waiting.
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return running == 2 && queued(t, hc, srv.URL) == 1
	})
	resp, e := postForm(t, &http.Client{Timeout: 10 * time.Second}, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%+v", e)
	retryAfter(t, resp)
	assert.Equal(t, "queue_full", *e.Error.Code)
	close(release)
	for range 3 {
		assert.Equal(t, http.StatusOK, <-statuses)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 2, most, "never more than the engine's slots at once")
}
