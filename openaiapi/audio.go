package openaiapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/audioin"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
)

// The multipart form of /v1/audio/transcriptions is bounded part by part:
// the file by the audio limits, each other field by maxAudioField, and the
// number of parts, so that no form makes npud buffer more than it allows.
const (
	maxAudioField = 64 << 10
	maxAudioParts = 64
)

// audioRequest is the multipart form of /v1/audio/transcriptions and
// /v1/audio/translations.
type audioRequest struct {
	file           []byte
	hasFile        bool
	model          string
	language       string
	prompt         string
	responseFormat string
	temperature    float64
	granularities  []string
	stream         bool
}

var languageCode = regexp.MustCompile(`^[a-z]{2,3}$`)

// readAudioForm reads the form one part at a time.
func (a *API) readAudioForm(r *http.Request, limits audioin.Limits) (audioRequest, *Error) {
	var req audioRequest
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" {
		return req, &Error{Type: "invalid_request_error", Code: "invalid_content_type", Base: errclass.Base{Status: http.StatusBadRequest,
			Message: "the request must be multipart/form-data with the audio in a 'file' part"}}
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return req, formError(err)
	}
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return req, formError(err)
		}
		if parts >= maxAudioParts {
			return req, invalid("", "invalid_value", "the form has more than %d parts", maxAudioParts)
		}
		name := part.FormName()
		if name == "file" {
			if req.file, err = readBounded(part, limits.MaxBytes); err != nil {
				if errors.Is(err, errFieldTooLarge) {
					return req, &Error{Type: "invalid_request_error", Param: "file", Code: "file_too_large", Base: errclass.Base{Status: http.StatusRequestEntityTooLarge,
						Message: fmt.Sprintf("'file' is over %d bytes (max-audio-bytes)", limits.MaxBytes), Cause: audioin.ErrTooLarge}}
				}
				return req, formError(err)
			}
			req.hasFile = true
			continue
		}
		value, err := readBounded(part, maxAudioField)
		if err != nil {
			if errors.Is(err, errFieldTooLarge) {
				return req, invalid(name, "invalid_value", "'%s' is over %d bytes", reqinfo.Clip(name), maxAudioField)
			}
			return req, formError(err)
		}
		v := string(value)
		switch name {
		case "model":
			req.model = v
		case "language":
			req.language = v
		case "prompt":
			req.prompt = v
		case "response_format":
			req.responseFormat = v
		case "temperature":
			t, err := strconv.ParseFloat(v, 64)
			if err != nil || t < 0 || t > 1 {
				return req, invalid("temperature", "invalid_value", "'temperature' must be a number from 0 to 1, got %q", reqinfo.Clip(v))
			}
			req.temperature = t
		case "timestamp_granularities[]", "timestamp_granularities":
			req.granularities = append(req.granularities, v)
		case "stream":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return req, invalid("stream", "invalid_value", "'stream' must be true or false, got %q", reqinfo.Clip(v))
			}
			req.stream = b
		}
		// Other fields OpenAI takes (chunking_strategy, include[]) change
		// nothing here.
	}
	return req, nil
}

var errFieldTooLarge = errors.New("form field too large")

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	var b bytes.Buffer
	n, err := b.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, errFieldTooLarge
	}
	return b.Bytes(), nil
}

// formError renders a form that could not be read: over the body limit
// (413), or not a well-formed multipart body (400).
func formError(err error) *Error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &Error{Type: "invalid_request_error", Code: "request_too_large", Base: errclass.Base{Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("the request body is over %d bytes (max-body-bytes)", tooLarge.Limit), Cause: err}}
	}
	return &Error{Type: "invalid_request_error", Code: "invalid_multipart", Base: errclass.Base{Status: http.StatusBadRequest,
		Message: fmt.Sprintf("the multipart form could not be read: %v", err), Cause: err}}
}

// audio serves POST /v1/audio/transcriptions and /v1/audio/translations:
// the file decoded (wire/audioin), then one job on the router, in the
// engine's queue like a generation.
func (a *API) audio(c *gin.Context, task string) {
	info := reqinfo.From(c.Request.Context())
	limits := a.cfg.Audio.WithDefaults()
	req, apiErr := a.readAudioForm(c.Request, limits)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	info.Model = req.model
	if apiErr := req.validate(task); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	// The model first: an unknown one is a 404, one that cannot hear a
	// 400, before any audio is decoded.
	m, err := a.router.Model(req.model)
	if err == nil {
		err = npu.CheckSpeech(m)
	}
	if err != nil {
		a.fail(c.Writer, info, a.modelWorkError(err))
		return
	}
	clip, apiErr := a.decodeAudio(c.Request.Context(), info, req.file, limits)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	defer clip.Release() // the samples' memory goes back when the job is done
	req.file = nil       // the upload is no longer needed while the job waits
	job := &npu.TranscribeRequest{Model: req.model, Samples: clip.Samples, Task: task,
		Language: req.language, Prompt: req.prompt, Temperature: req.temperature, Tenant: info.Tenant}
	if req.stream {
		a.streamTranscript(c, info, job)
		return
	}
	out, err := a.router.Transcribe(c.Request.Context(), job)
	if err != nil {
		a.fail(c.Writer, info, a.modelWorkError(err))
		return
	}
	if a.router.Simulated() {
		c.Header("X-Npud-Simulated", "true")
	}
	writeTranscript(c, req.responseFormat, task, job.Seconds(), req.temperature, out)
}

// decodeAudio decodes an upload, at most MaxAudioDecodes at once: a
// compressed file costs CPU (and the external decoder a process) before
// the job ever reaches the engine's queue, so uploads past the bound are
// refused like a full queue, with Retry-After.
func (a *API) decodeAudio(ctx context.Context, info *reqinfo.Info, file []byte, limits audioin.Limits) (audioin.Clip, *Error) {
	select {
	case a.decodes <- struct{}{}:
		defer func() { <-a.decodes }()
	default:
		return audioin.Clip{}, &Error{Type: "server_error", Code: "queue_full", Base: errclass.Base{Status: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("%d audio files are being decoded (max-audio-decodes): retry shortly", cap(a.decodes)), RetryAfter: time.Second, Cause: npu.ErrQueueFull}}
	}
	clip, err := audioin.DecodeContext(ctx, file, limits, a.cfg.AudioDecoder)
	if err == nil {
		return clip, nil
	}
	if errors.Is(err, audioin.ErrBusy) {
		return audioin.Clip{}, &Error{Type: "server_error", Code: "queue_full", Base: errclass.Base{Status: http.StatusServiceUnavailable,
			RetryAfter: a.router.RetryAfter(), Cause: fmt.Errorf("%w: %w", npu.ErrQueueFull, err),
			Message: "the memory for decoded audio is in use by other requests (max-audio-memory): retry shortly"}}
	}
	if !errors.Is(err, audioin.ErrInvalid) {
		if ctx.Err() != nil {
			return audioin.Clip{}, toError(context.Cause(ctx), a.router.RetryAfter)
		}
		// The external decoder could not run: the server's fault, and its
		// path is the server's business (the log has it).
		a.log.Error("decoding an audio upload failed", "request_id", info.ID, "err", err)
		return audioin.Clip{}, &Error{Type: "server_error", Code: "internal_error", Base: errclass.Base{Status: http.StatusInternalServerError,
			Message: "the audio decoder failed (the server's log says why)", Cause: err}}
	}
	var decoderErr *audioin.DecoderError
	if errors.As(err, &decoderErr) {
		// What ffmpeg said may quote the file: the log has it, escaped.
		a.log.Info("the external audio decoder refused a file", "request_id", info.ID, "format", decoderErr.Format,
			"err", decoderErr.Err, "stderr", reqinfo.Clip(decoderErr.Stderr))
	}
	e := invalid("file", "invalid_value", "%v", err)
	if errors.Is(err, audioin.ErrTooLarge) {
		e.Code = "audio_too_long"
	}
	e.Cause = err
	return audioin.Clip{}, e
}

func (r *audioRequest) validate(task string) *Error {
	if !r.hasFile {
		return invalid("file", "missing_required_parameter", "'file' is required: the audio, as a multipart file part")
	}
	if r.model == "" {
		return invalid("model", "missing_required_parameter", "'model' is required")
	}
	switch r.responseFormat {
	case "":
		r.responseFormat = "json"
	case "json", "text", "srt", "vtt", "verbose_json":
	default:
		return invalid("response_format", "invalid_value", "'response_format' must be json, text, srt, vtt or verbose_json, got %q", reqinfo.Clip(r.responseFormat))
	}
	if r.language != "" {
		if task == npu.TaskTranslate {
			return invalid("language", "invalid_value", "'language' is not taken by translations: Whisper translates into English")
		}
		if !languageCode.MatchString(r.language) {
			return invalid("language", "invalid_value", "'language' must be an ISO-639-1 code such as \"en\", got %q", reqinfo.Clip(r.language))
		}
	}
	for _, g := range r.granularities {
		switch g {
		case "segment":
		case "word":
			return invalid("timestamp_granularities[]", "unsupported_value", "word timestamps are not supported yet: ask for \"segment\"")
		default:
			return invalid("timestamp_granularities[]", "invalid_value", "'timestamp_granularities[]' must be \"segment\" or \"word\", got %q", reqinfo.Clip(g))
		}
	}
	if len(r.granularities) > 0 && r.responseFormat != "verbose_json" {
		return invalid("timestamp_granularities[]", "invalid_value", "'timestamp_granularities[]' needs response_format verbose_json")
	}
	if r.stream && task == npu.TaskTranslate {
		return invalid("stream", "unsupported_value", "translations are not streamed (OpenAI streams transcriptions only): send stream=false")
	}
	if r.stream && r.responseFormat != "json" && r.responseFormat != "text" {
		return invalid("stream", "unsupported_value", "streamed transcriptions are events of text: response_format json or text, not %s", r.responseFormat)
	}
	return nil
}
