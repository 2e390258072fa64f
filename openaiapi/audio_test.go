package openaiapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/daemon"
	"github.com/npud/npud/daemon/daemontest"
	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/audioin/audiotest"
	"github.com/npud/npud/wire/audioin/wavtest"
)

// heard is what the simulated engine says it heard (audiotest.Heard).
type heard struct{ seconds, level, pitch float64 }

func parseHeard(t *testing.T, text string) heard {
	h := audiotest.ParseHeard(t, text)
	return heard{h.Seconds, h.Level, h.Pitch}
}

func wavFile(data []byte) io.Reader {
	return openai.File(bytes.NewReader(data), "audio.wav", "audio/wav")
}

// A tone made in Go goes through openai-go to the simulated engine, which
// hears its length, level and pitch: a wrong rate would move the pitch and
// the length, wrong channel mixing or scaling the level.
func TestOpenAIGoTranscriptionHearsTone(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	f := newSDKFixture(t, nil, nil)
	silence := make([]float64, int(2.5*44100))
	for _, tc := range []struct {
		name  string
		wav   []byte
		level float64
	}{
		{"16-bit 44.1 kHz stereo", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 2.5, 44100), wavtest.Tone(440, 0.5, 2.5, 44100)}, 44100, wavtest.PCM16), 0.354},
		{"left channel only", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 2.5, 44100), silence}, 44100, wavtest.PCM16), 0.177},
		{"8-bit 8 kHz", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 2.5, 8000)}, 8000, wavtest.PCM8), 0.354},
		{"float 48 kHz", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 2.5, 48000)}, 48000, wavtest.Float32), 0.354},
		{"24-bit 96 kHz", wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 2.5, 96000)}, 96000, wavtest.PCM24), 0.354},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
				File: wavFile(tc.wav), Model: "sim"})
			require.NoError(t, err)
			h := parseHeard(t, resp.Text)
			assert.InDelta(t, 2.5, h.seconds, 0.01)
			assert.InDelta(t, tc.level, h.level, 0.004)
			assert.InDelta(t, 440, h.pitch, 2)
			assert.EqualValues(t, 3, resp.Usage.Seconds)
		})
	}
}

// Every response format, through openai-go: json and verbose_json parsed
// by it, text, srt and vtt read raw (the SDK hands them over as bodies).
func TestOpenAIGoTranscriptionFormats(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	f := newSDKFixture(t, nil, nil)
	// 65 s: three of Whisper's 30 s windows, three segments.
	tone := wavtest.Tone(440, 0.5, 65, 16000)
	wav := wavtest.Encode([][]float64{tone}, 16000, wavtest.PCM16)

	t.Run("verbose_json", func(t *testing.T) {
		resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
			File: wavFile(wav), Model: "sim", ResponseFormat: openai.AudioResponseFormatVerboseJSON,
			Language: openai.String("de"), Temperature: openai.Float(0.2),
			TimestampGranularities: []string{"segment"}})
		require.NoError(t, err)
		v := resp.AsTranscriptionVerbose()
		assert.InDelta(t, 65, v.Duration, 0.01)
		assert.Equal(t, "de", v.Language)
		require.Len(t, v.Segments, 3)
		for i, want := range [][2]float64{{0, 30}, {30, 60}, {60, 65}} {
			s := v.Segments[i]
			assert.EqualValues(t, i, s.ID)
			assert.InDelta(t, want[0], s.Start, 1e-9)
			assert.InDelta(t, want[1], s.End, 1e-9)
			assert.InDelta(t, want[1]-want[0], parseHeard(t, s.Text).seconds, 0.01)
			assert.InDelta(t, 0.2, s.Temperature, 1e-9)
		}
		assert.Contains(t, v.Text, v.Segments[2].Text)
	})
	t.Run("json", func(t *testing.T) {
		resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
			File: wavFile(wav), Model: "sim", ResponseFormat: openai.AudioResponseFormatJSON})
		require.NoError(t, err)
		assert.Equal(t, 3, len(audiotest.HeardWords.FindAllString(resp.Text, -1)))
	})
	raw := func(t *testing.T, format openai.AudioResponseFormat) (http.Header, string) {
		var hr *http.Response
		_, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
			File: wavFile(wav), Model: "sim", ResponseFormat: format}, option.WithResponseBodyInto(&hr))
		require.NoError(t, err)
		defer hr.Body.Close()
		b, err := io.ReadAll(hr.Body)
		require.NoError(t, err)
		return hr.Header, string(b)
	}
	t.Run("text", func(t *testing.T) {
		header, body := raw(t, openai.AudioResponseFormatText)
		assert.True(t, strings.HasPrefix(header.Get("Content-Type"), "text/plain"))
		assert.Regexp(t, `^0?30.00 seconds, level 0.35[0-9], pitch 440 Hz\. 30.00 seconds, .* 5.00 seconds, level 0.35[0-9], pitch 440 Hz\.\n$`, body)
	})
	t.Run("srt", func(t *testing.T) {
		_, body := raw(t, openai.AudioResponseFormatSRT)
		assert.Regexp(t, `^1\n00:00:00,000 --> 00:00:30,000\n30.00 seconds, [^\n]+\n\n`+
			`2\n00:00:30,000 --> 00:01:00,000\n30.00 seconds, [^\n]+\n\n`+
			`3\n00:01:00,000 --> 00:01:05,000\n5.00 seconds, [^\n]+\n\n$`, body)
	})
	t.Run("vtt", func(t *testing.T) {
		header, body := raw(t, openai.AudioResponseFormatVTT)
		assert.True(t, strings.HasPrefix(header.Get("Content-Type"), "text/vtt"))
		assert.Regexp(t, `^WEBVTT\n\n00:00:00.000 --> 00:00:30.000\n30.00 seconds, [^\n]+\n\n`+
			`00:00:30.000 --> 00:01:00.000\n[^\n]+\n\n00:01:00.000 --> 00:01:05.000\n5.00 seconds, [^\n]+\n\n$`, body)
	})
}

// Speech made by Debian's espeak-ng (the Makefile installs it): a real
// WAV from another program, 22.05 kHz 16-bit mono, is heard whole.
func TestOpenAIGoTranscriptionEspeak(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	wav, err := os.ReadFile(audiotest.Speech(t))
	require.NoError(t, err)
	clip, err := audioin.Decode(wav, audioin.Limits{})
	require.NoError(t, err)
	require.Equal(t, 22050, clip.SourceRate, "espeak-ng writes 22.05 kHz")

	f := newSDKFixture(t, nil, nil)
	resp, err := f.client.Audio.Transcriptions.New(sdkContext(t), openai.AudioTranscriptionNewParams{
		File: wavFile(wav), Model: "sim", ResponseFormat: openai.AudioResponseFormatVerboseJSON})
	require.NoError(t, err)
	v := resp.AsTranscriptionVerbose()
	h := parseHeard(t, v.Text)
	assert.InDelta(t, clip.Duration().Seconds(), v.Duration, 0.001)
	assert.InDelta(t, clip.Duration().Seconds(), h.seconds, 0.01)
	assert.Greater(t, h.level, 0.02, "speech is heard, not silence")

	//nolint:staticcheck // OpenAI deprecates translations in the SDK, but clients still call them and npud serves them
	tr, err := f.client.Audio.Translations.New(sdkContext(t), openai.AudioTranslationNewParams{
		File: wavFile(wav), Model: "sim"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tr.Text, "Translated: "), "%q", tr.Text)
	assert.InDelta(t, h.seconds, parseHeard(t, tr.Text).seconds, 1e-9)
}

// audioForm builds a multipart body; fields are name, value pairs, and a
// "file" value is sent as a file part.
func audioForm(t *testing.T, fields ...string) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i < len(fields); i += 2 {
		if fields[i] == "file" {
			fw, err := w.CreateFormFile("file", "audio.wav")
			require.NoError(t, err)
			_, _ = fw.Write([]byte(fields[i+1]))
			continue
		}
		require.NoError(t, w.WriteField(fields[i], fields[i+1]))
	}
	require.NoError(t, w.Close())
	return b.Bytes(), w.FormDataContentType()
}

// postForm posts body and returns the response, its body read and
// closed, and the OpenAI error it carried unless it was a 200.
//
//bodyclose:handled
func postForm(t *testing.T, hc *http.Client, url string, body []byte, contentType string) (*http.Response, apiError) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e apiError
	if resp.StatusCode != http.StatusOK {
		require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	}
	return resp, e
}

// apiError is OpenAI's error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func TestTranscriptionErrors(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, func(c *daemon.Config) {
		c.MaxAudioBytes = 200_000
		c.MaxAudioDuration = 5 * time.Second
	}, nil)
	hc := &http.Client{}
	wav := string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16))
	long := string(wavtest.Encode([][]float64{make([]float64, 6*8000)}, 8000, wavtest.PCM8))
	big := string(wavtest.Encode([][]float64{make([]float64, 120_000)}, 16000, wavtest.PCM16))
	for _, tc := range []struct {
		name   string
		path   string
		fields []string
		status int
		param  string
		code   string
		msg    string
	}{
		{"no file", "transcriptions", []string{"model", "sim"}, 400, "file", "missing_required_parameter", "'file' is required"},
		{"no model", "transcriptions", []string{"file", wav}, 400, "model", "missing_required_parameter", "'model' is required"},
		{"unknown model", "transcriptions", []string{"file", wav, "model", "nope"}, 404, "model", "model_not_found", "nope"},
		{"broken mp3", "transcriptions", []string{"file", "ID3\x04\x00\x00\x00\x00\x00\x00rest", "model", "sim"}, 400, "file", "invalid_value", "the MP3 file could not be read"},
		{"text file", "transcriptions", []string{"file", "hello", "model", "sim"}, 400, "file", "invalid_value", "npud cannot decode this file (not a format npud recognises): it decodes WAV (8/16/24/32-bit integer PCM or 32/64-bit float, any sample rate and channel count), FLAC, MP3, Ogg Vorbis"},
		{"unknown model before decoding", "transcriptions", []string{"file", "hello", "model", "nope"}, 404, "model", "model_not_found", "nope"},
		{"format", "transcriptions", []string{"file", wav, "model", "sim", "response_format", "diarized_json"}, 400, "response_format", "invalid_value", "json, text, srt, vtt or verbose_json"},
		{"temperature", "transcriptions", []string{"file", wav, "model", "sim", "temperature", "2"}, 400, "temperature", "invalid_value", "from 0 to 1"},
		{"language", "transcriptions", []string{"file", wav, "model", "sim", "language", "English"}, 400, "language", "invalid_value", "ISO-639-1"},
		{"translation language", "translations", []string{"file", wav, "model", "sim", "language", "de"}, 400, "language", "invalid_value", "into English"},
		{"word timestamps", "transcriptions", []string{"file", wav, "model", "sim", "response_format", "verbose_json", "timestamp_granularities[]", "word"}, 400, "timestamp_granularities[]", "unsupported_value", "word timestamps"},
		{"streamed translation", "translations", []string{"file", wav, "model", "sim", "stream", "true"}, 400, "stream", "unsupported_value", "translations are not streamed"},
		{"streamed srt", "transcriptions", []string{"file", wav, "model", "sim", "stream", "true", "response_format", "srt"}, 400, "stream", "unsupported_value", "not srt"},
		{"stream not a boolean", "transcriptions", []string{"file", wav, "model", "sim", "stream", "yes"}, 400, "stream", "invalid_value", "true or false"},
		{"too long", "transcriptions", []string{"file", long, "model", "sim"}, 400, "file", "audio_too_long", "at most 5s"},
		{"too many bytes", "transcriptions", []string{"file", big, "model", "sim"}, 413, "file", "file_too_large", "over 200000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := audioForm(t, tc.fields...)
			resp, e := postForm(t, hc, srv.URL+"/v1/audio/"+tc.path, body, ct)
			require.Equal(t, tc.status, resp.StatusCode, "%+v", e)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.NotNil(t, e.Error.Param)
			assert.Equal(t, tc.param, *e.Error.Param)
			require.NotNil(t, e.Error.Code)
			assert.Equal(t, tc.code, *e.Error.Code)
			assert.Contains(t, e.Error.Message, tc.msg)
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", []byte(`{"model":"sim"}`), "application/json")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, e.Error.Message, "multipart/form-data")
	})
}

// A transcription waits in the engine's queue like a generation: with no
// room, a real 503 with Retry-After at once.
func TestTranscriptionQueueFullIs503(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, func(c *daemon.Config) { c.MaxQueue = 0 }, hogFaults(nil))
	hc := &http.Client{}
	release := startHog(t, hc, srv.URL)
	body, ct := audioForm(t, "file", string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)), "model", "sim")
	resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	retryAfter(t, resp)
	require.NotNil(t, e.Error.Code)
	assert.Equal(t, "queue_full", *e.Error.Code)
	assert.Equal(t, "server_error", e.Error.Type)
	release()
	waitFor(t, func() bool { return activeStreams(t, hc, srv.URL) == 0 })
	resp, e = postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", e)
}

// A transcription counts against the tenant's stream cap with its
// generations (--max-streams-per-key), as an embedding does: a 429 with
// Retry-After while its one stream runs.
func TestTranscriptionCountsAgainstTheStreamCap(t *testing.T) {
	daemontest.SimOnly(t, "the simulated engine's transcriber")
	srv := startSim(t, func(c *daemon.Config) { c.MaxStreams = 1 }, hogFaults(nil))
	hc := &http.Client{}
	release := startHog(t, hc, srv.URL)
	body, ct := audioForm(t, "file", string(wavtest.Encode([][]float64{wavtest.Tone(440, 0.5, 1, 16000)}, 16000, wavtest.PCM16)), "model", "sim")
	resp, e := postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	retryAfter(t, resp)
	require.NotNil(t, e.Error.Code)
	assert.Equal(t, "too_many_streams", *e.Error.Code)
	release()
	waitFor(t, func() bool { return activeStreams(t, hc, srv.URL) == 0 })
	resp, e = postForm(t, hc, srv.URL+"/v1/audio/transcriptions", body, ct)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%+v", e)
}
