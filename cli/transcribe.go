package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// `npud transcribe FILE` sends an audio file to the running daemon's
// /v1/audio/transcriptions (or /translations) as OpenAI's clients do and
// prints the answer.

const transcribeWhat = "FILE [--model MODEL] [--format text|json|srt|vtt|verbose_json] [--language xx] [--prompt TEXT] [--translate]"

// transcribeFormats are the response formats the endpoint answers in.
var transcribeFormats = []string{"text", "json", "srt", "vtt", "verbose_json"}

// maxTranscriptBytes bounds the answer read back: far more than any
// transcript of the audio the daemon takes, and an error, not a cut, past it.
const maxTranscriptBytes = 64 << 20

// maxSpeechModelsAsked bounds the /api/show calls made to find the speech
// model when --model is not given.
const maxSpeechModelsAsked = 64

func transcribeCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var model, format, language, prompt string
	var translate bool
	c, rest, code := clientFlags("transcribe", transcribeWhat, args, getenv, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&model, "model", "", "the speech model (default: the daemon's only one)")
		fs.StringVar(&format, "format", "text", "the answer's format: "+strings.Join(transcribeFormats, ", "))
		fs.StringVar(&language, "language", "", "the audio's language, an ISO-639-1 code such as en (default: detected)")
		fs.StringVar(&prompt, "prompt", "", "text the speech is likely to continue or contain (names, spellings)")
		fs.BoolVar(&translate, "translate", false, "translate the speech into English (/v1/audio/translations)")
	})
	if code >= 0 {
		return code
	}
	if len(rest) != 1 {
		return wrongArgs(stderr, "transcribe", "FILE", rest)
	}
	file := rest[0]
	if !slices.Contains(transcribeFormats, format) {
		fmt.Fprintf(stderr, "npud transcribe: --format %q: want one of %s\n", format, strings.Join(transcribeFormats, ", "))
		return 2
	}
	if translate && language != "" {
		fmt.Fprintln(stderr, "npud transcribe: --language is not taken with --translate: Whisper translates into English")
		return 2
	}
	text, err := c.transcribe(ctx, file, transcription{model: model, format: format, language: language, prompt: prompt, translate: translate})
	if err != nil {
		fmt.Fprintf(stderr, "npud transcribe: %s\n", terminalSafe(err.Error(), true))
		return 1
	}
	out := terminalSafe(text, true)
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	fmt.Fprint(stdout, out)
	return 0
}

// transcription is what one `npud transcribe` asks for.
type transcription struct {
	model, format, language, prompt string
	translate                       bool
}

// transcribe posts the file as OpenAI's multipart form, streamed from
// disk, and returns the daemon's answer as it came.
func (c *apiClient) transcribe(ctx context.Context, path string, t transcription) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if st.IsDir() {
		return "", fmt.Errorf("%s is a folder, not an audio file", path)
	}
	if t.model == "" {
		if t.model, err = c.speechModel(ctx); err != nil {
			return "", err
		}
	}
	endpoint := "/v1/audio/transcriptions"
	if t.translate {
		endpoint = "/v1/audio/translations"
	}
	body, form := io.Pipe()
	mw := multipart.NewWriter(form)
	go func() {
		// The writer's error ends the request's body with it; the
		// request's error ends the writer (body.CloseWithError below).
		_ = form.CloseWithError(writeAudioForm(mw, f, filepath.Base(path), t))
	}()
	resp, err := c.send(ctx, http.MethodPost, endpoint, mw.FormDataContentType(), body)
	_ = body.CloseWithError(errors.New("the request ended")) // stops the writer if the daemon answered early
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxTranscriptBytes+1))
	if err != nil {
		return "", err
	}
	if len(raw) > maxTranscriptBytes {
		return "", fmt.Errorf("the daemon's answer is over %d bytes", maxTranscriptBytes)
	}
	return string(raw), nil
}

// writeAudioForm writes the form fields, then the file.
func writeAudioForm(mw *multipart.Writer, audio io.Reader, name string, t transcription) error {
	fields := [][2]string{{"model", t.model}, {"response_format", t.format}, {"language", t.language}, {"prompt", t.prompt}}
	for _, kv := range fields {
		if kv[1] == "" {
			continue
		}
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return err
		}
	}
	part, err := mw.CreateFormFile("file", name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, audio); err != nil {
		return err
	}
	return mw.Close()
}

// speechModel is the daemon's one model that hears audio.
func (c *apiClient) speechModel(ctx context.Context) (string, error) {
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/api/tags", nil, &tags); err != nil {
		return "", err
	}
	if len(tags.Models) > maxSpeechModelsAsked {
		return "", fmt.Errorf("the daemon serves %d models: name the speech model with --model", len(tags.Models))
	}
	var speech []string
	for _, m := range tags.Models {
		var show struct {
			Capabilities []string `json:"capabilities"`
		}
		if err := c.getJSON(ctx, http.MethodPost, "/api/show", map[string]string{"model": m.Name}, &show); err != nil {
			return "", err
		}
		if slices.Contains(show.Capabilities, "audio") {
			speech = append(speech, m.Name)
		}
	}
	switch len(speech) {
	case 0:
		return "", errors.New("the daemon serves no speech model: npud pull a Whisper model (OpenVINO/whisper-…-ov), or name one with --model")
	case 1:
		return speech[0], nil
	}
	return "", fmt.Errorf("the daemon serves %d speech models: choose one with --model (%s)", len(speech), strings.Join(speech, ", "))
}
