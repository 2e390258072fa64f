//go:build cgo

package openvino

/*
#include <stdlib.h>
#include "ovapi.h"

// cgo cannot call through the table's pointers: these call GenAI's Whisper
// functions for Go. The constructor is variadic (NPUD_CALL_CREATE, binding.go).
static ov_status_e npud_whisper_create(const npud_ov_api* api, const char* path, const char* device, const char** k,
                                       const char** v, size_t n, ov_genai_whisper_pipeline** pipe) {
	switch (n) {
	case 0: return api->ov_genai_whisper_pipeline_create(path, device, 0, pipe);
	case 1: return api->ov_genai_whisper_pipeline_create(path, device, 2, pipe, k[0], v[0]);
	case 2: return api->ov_genai_whisper_pipeline_create(path, device, 4, pipe, k[0], v[0], k[1], v[1]);
	case 3: return api->ov_genai_whisper_pipeline_create(path, device, 6, pipe, k[0], v[0], k[1], v[1], k[2], v[2]);
	case 4: return api->ov_genai_whisper_pipeline_create(path, device, 8, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3]);
	case 5: return api->ov_genai_whisper_pipeline_create(path, device, 10, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4]);
	case 6: return api->ov_genai_whisper_pipeline_create(path, device, 12, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5]);
	case 7: return api->ov_genai_whisper_pipeline_create(path, device, 14, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6]);
	case 8: return api->ov_genai_whisper_pipeline_create(path, device, 16, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7]);
	}
	return INVALID_C_PARAM;
}

static void npud_whisper_free(const npud_ov_api* api, ov_genai_whisper_pipeline* pipe) {
	api->ov_genai_whisper_pipeline_free(pipe);
}

static ov_status_e npud_whisper_config(const npud_ov_api* api, const ov_genai_whisper_pipeline* pipe,
                                       ov_genai_whisper_generation_config** config) {
	return api->ov_genai_whisper_pipeline_get_generation_config(pipe, config);
}

static void npud_whisper_config_free(const npud_ov_api* api, ov_genai_whisper_generation_config* config) {
	api->ov_genai_whisper_generation_config_free(config);
}

static ov_status_e npud_whisper_multilingual(const npud_ov_api* api, const ov_genai_whisper_generation_config* config,
                                             bool* multilingual) {
	return api->ov_genai_whisper_generation_config_get_is_multilingual(config, multilingual);
}

// npud_whisper_set applies a request to a config: NULL leaves a field unset.
static ov_status_e npud_whisper_set(const npud_ov_api* api, ov_genai_whisper_generation_config* config,
                                    const char* language, const char* task, const char* prompt) {
	ov_status_e st = api->ov_genai_whisper_generation_config_set_return_timestamps(config, true);
	if (st == OK && language) st = api->ov_genai_whisper_generation_config_set_language(config, language);
	if (st == OK && task) st = api->ov_genai_whisper_generation_config_set_task(config, task);
	if (st == OK && prompt) st = api->ov_genai_whisper_generation_config_set_initial_prompt(config, prompt);
	return st;
}

static ov_status_e npud_whisper_validate(const npud_ov_api* api, ov_genai_whisper_generation_config* config) {
	return api->ov_genai_whisper_generation_config_validate(config);
}

static ov_status_e npud_whisper_generate(const npud_ov_api* api, ov_genai_whisper_pipeline* pipe, const float* speech,
                                         size_t n, const ov_genai_whisper_generation_config* config,
                                         ov_genai_whisper_decoded_results** results) {
	return api->ov_genai_whisper_pipeline_generate(pipe, speech, n, config, results);
}

static void npud_whisper_results_free(const npud_ov_api* api, ov_genai_whisper_decoded_results* results) {
	api->ov_genai_whisper_decoded_results_free(results);
}

static ov_status_e npud_whisper_texts(const npud_ov_api* api, const ov_genai_whisper_decoded_results* results, size_t* n) {
	return api->ov_genai_whisper_decoded_results_get_texts_count(results, n);
}

static ov_status_e npud_whisper_text_at(const npud_ov_api* api, const ov_genai_whisper_decoded_results* results,
                                        size_t i, char* text, size_t* size) {
	return api->ov_genai_whisper_decoded_results_get_text_at(results, i, text, size);
}

// npud_whisper_chunks counts the chunks: 0 when there are none.
static ov_status_e npud_whisper_chunks(const npud_ov_api* api, const ov_genai_whisper_decoded_results* results, size_t* n) {
	bool has = false;
	ov_status_e st = api->ov_genai_whisper_decoded_results_has_chunks(results, &has);
	*n = 0;
	if (st != OK || !has) return st;
	return api->ov_genai_whisper_decoded_results_get_chunks_count(results, n);
}

static ov_status_e npud_whisper_chunk_at(const npud_ov_api* api, const ov_genai_whisper_decoded_results* results,
                                         size_t i, ov_genai_whisper_decoded_result_chunk** chunk) {
	return api->ov_genai_whisper_decoded_results_get_chunk_at(results, i, chunk);
}

static void npud_whisper_chunk_free(const npud_ov_api* api, ov_genai_whisper_decoded_result_chunk* chunk) {
	api->ov_genai_whisper_decoded_result_chunk_free(chunk);
}

static ov_status_e npud_whisper_chunk_times(const npud_ov_api* api, const ov_genai_whisper_decoded_result_chunk* chunk,
                                            float* start, float* end) {
	ov_status_e st = api->ov_genai_whisper_decoded_result_chunk_get_start_ts(chunk, start);
	if (st == OK) st = api->ov_genai_whisper_decoded_result_chunk_get_end_ts(chunk, end);
	return st;
}

static ov_status_e npud_whisper_chunk_text(const npud_ov_api* api, const ov_genai_whisper_decoded_result_chunk* chunk,
                                           char* text, size_t* size) {
	return api->ov_genai_whisper_decoded_result_chunk_get_text(chunk, text, size);
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/npud/npud/npu"
)

// maxWhisperProperties is what the Whisper constructor shim accepts: the
// engine passes none of the NPU's LLM properties to it, so a few suffice.
const maxWhisperProperties = 8

// minSpeechSamples: GenAI's feature extractor throws for raw speech of
// n_fft/2 samples or fewer (src/cpp/src/whisper/feature_extractor.cpp:
// "raw_speech too short for reflect padding"; n_fft is 400).
const minSpeechSamples = 201

// maxWhisperText bounds what the binding copies out of a result: Whisper
// writes at most a few hundred tokens per 30-second window.
const maxWhisperText = 1 << 24

// compileWhisper creates GenAI's Whisper pipeline for the speech model in dir.
func compileWhisper(api *C.npud_ov_api, dir, device string, props []property) (*pipeline, error) {
	if api.speech_missing != nil {
		return nil, fmt.Errorf("model %q is a speech (Whisper) model, and the OpenVINO GenAI library lacks %s: it has no Whisper pipeline",
			filepath.Base(dir), C.GoString(api.speech_missing))
	}
	if len(props) > maxWhisperProperties {
		return nil, fmt.Errorf("%d pipeline properties: at most %d are supported for a speech model", len(props), maxWhisperProperties)
	}
	args := newCreateArgs(dir, device, props, maxWhisperProperties)
	defer args.free()
	p := &pipeline{api: api, model: dir, device: device}
	if err := check(api, "ov_genai_whisper_pipeline_create", args.input,
		C.npud_whisper_create(api, args.dir, args.device, args.keys, args.vals, C.size_t(len(props)), &p.whisper)); err != nil {
		return nil, err
	}
	return p, nil
}

func freeWhisper(api *C.npud_ov_api, w *C.ov_genai_whisper_pipeline) { C.npud_whisper_free(api, w) }

// Transcribe implements npu.Engine: the model's Whisper pipeline
// hears req's samples. The router has loaded the model and holds its slot.
func (e *Engine) Transcribe(ctx context.Context, req *npu.TranscribeRequest) (npu.Transcript, error) {
	e.mu.Lock()
	p, ok := e.pipelines[req.Model]
	e.mu.Unlock()
	if !ok {
		return npu.Transcript{}, fmt.Errorf("model %q is not loaded: %w", req.Model, npu.ErrModelNotFound)
	}
	if p.whisper == nil {
		return npu.Transcript{}, &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q does not transcribe audio: it is not a speech (Whisper) model", req.Model)}
	}
	if err := ctx.Err(); err != nil {
		return npu.Transcript{}, context.Cause(ctx) // a transcription cannot be stopped once it runs
	}
	out, err := p.transcribe(req)
	if err != nil {
		var invalid *npu.InvalidRequestError
		if errors.As(err, &invalid) {
			return out, err
		}
		return out, &npu.EngineError{Engine: "openvino", Cause: err}
	}
	return out, nil
}

// transcribe runs one Whisper generate. GenAI's C API takes 16 kHz mono
// float samples and has no streamer and no way to stop a generate: it
// returns when every 30-second window is decoded (whisper.cpp:
// whisper_generate walks the audio window by window, each window starting
// where the last one's final timestamp ended). Timestamps are always asked
// for, so the chunks give the segments; they are what a long audio is
// decoded with anyway.
func (p *pipeline) transcribe(req *npu.TranscribeRequest) (npu.Transcript, error) {
	if len(req.Samples) < minSpeechSamples {
		return npu.Transcript{}, &npu.InvalidRequestError{Param: "file", Message: fmt.Sprintf(
			"the audio is %d samples long at 16 kHz: OpenVINO GenAI's Whisper needs more than %d (%.1f ms)",
			len(req.Samples), minSpeechSamples-1, float64(minSpeechSamples-1)*1000/npu.AudioSampleRate)}
	}
	name := filepath.Base(p.model)
	if req.Prompt != "" && deviceKind(p.device) == "NPU" {
		// GenAI compiles Whisper's NPU decoder for a prompt of 4 tokens, the
		// start-of-transcript ones (src/cpp/src/utils.cpp:
		// get_npu_model_config, MAX_PROMPT_LEN 4 for Whisper; the static
		// pipeline's MAX_PROMPT_LEN in src/cpp/src/whisper/pipeline_static.cpp),
		// and an initial prompt goes before them in the first window's
		// prompt (context_tokens.cpp: get_prompt_tokens): it does not fit.
		return npu.Transcript{}, &npu.InvalidRequestError{Param: "prompt", Message: fmt.Sprintf(
			"model %q runs on the NPU, where OpenVINO GenAI's Whisper decoder is compiled for a 4-token prompt: "+
				"it takes no initial prompt (send none, or run the model on the CPU or GPU)", name)}
	}
	if !p.busy.CompareAndSwap(false, true) {
		return npu.Transcript{}, errors.New("openvino: concurrent generate on one pipeline (the scheduler must serialise them)")
	}
	defer p.busy.Store(false)
	api := p.api
	var cfg *C.ov_genai_whisper_generation_config
	if err := check(api, "ov_genai_whisper_pipeline_get_generation_config", p.model, C.npud_whisper_config(api, p.whisper, &cfg)); err != nil {
		return npu.Transcript{}, err
	}
	defer C.npud_whisper_config_free(api, cfg)
	var multilingual C.bool
	if err := check(api, "ov_genai_whisper_generation_config_get_is_multilingual", p.model, C.npud_whisper_multilingual(api, cfg, &multilingual)); err != nil {
		return npu.Transcript{}, err
	}
	language, task, err := whisperLanguageTask(req, name, bool(multilingual))
	if err != nil {
		return npu.Transcript{}, err
	}
	cstr := func(s string) *C.char {
		if s == "" {
			return nil
		}
		return C.CString(s)
	}
	clang, ctask, cprompt := cstr(language), cstr(task), cstr(req.Prompt)
	defer C.free(unsafe.Pointer(clang))
	defer C.free(unsafe.Pointer(ctask))
	defer C.free(unsafe.Pointer(cprompt))
	if err := check(api, "ov_genai_whisper_generation_config_set_*", p.model, C.npud_whisper_set(api, cfg, clang, ctask, cprompt)); err != nil {
		return npu.Transcript{}, err
	}
	// GenAI validates the config on every generate (whisper_utils.cpp:
	// prepare_per_generate_config) and says only -17; validated first, a
	// language the model does not know is the client's error.
	if C.npud_whisper_validate(api, cfg) != C.OK {
		if language == "" {
			// Nothing of the request's was refused: the folder's config is.
			return npu.Transcript{}, fmt.Errorf("model %q: OpenVINO GenAI refuses its Whisper config "+
				"(a multilingual model needs lang_to_id in generation_config.json)", name)
		}
		return npu.Transcript{}, &npu.InvalidRequestError{Param: "language", Message: fmt.Sprintf(
			"model %q does not take language %q (its generation_config.json lang_to_id does not list it)", name, req.Language)}
	}
	var results *C.ov_genai_whisper_decoded_results
	status := C.npud_whisper_generate(api, p.whisper, (*C.float)(unsafe.Pointer(&req.Samples[0])), C.size_t(len(req.Samples)), cfg, &results)
	if err := check(api, "ov_genai_whisper_pipeline_generate", fmt.Sprintf("model %q, device %q, %d samples", p.model, p.device, len(req.Samples)), status); err != nil {
		return npu.Transcript{}, err
	}
	defer C.npud_whisper_results_free(api, results)
	return readTranscript(api, results, req)
}

// whisperLanguageTask is what the config is told of req: the language as
// the token lang_to_id names it ("<|de|>": GenAI 2026.3's validate takes
// only that form, 2026.4 also a plain code), the task. An English-only
// model (is_multilingual false) takes neither, and GenAI refuses both
// (generation_config.cpp), so it transcribes English only.
func whisperLanguageTask(req *npu.TranscribeRequest, model string, multilingual bool) (language, task string, err error) {
	if !multilingual {
		switch {
		case req.Task == npu.TaskTranslate:
			return "", "", &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
				"model %q is an English-only Whisper (is_multilingual is false): it cannot translate; use a multilingual one", model)}
		case req.Language != "" && req.Language != "en":
			return "", "", &npu.InvalidRequestError{Param: "language", Message: fmt.Sprintf(
				"model %q is an English-only Whisper: it transcribes English only, not %q", model, req.Language)}
		}
		return "", "", nil
	}
	if req.Language != "" {
		language = "<|" + req.Language + "|>"
	}
	task = npu.TaskTranscribe
	if req.Task == npu.TaskTranslate {
		task = npu.TaskTranslate
	}
	return language, task, nil
}

// readTranscript reads the text and the chunks (GenAI's segments) of a
// result. GenAI's text is the tokenizer's decode, with its leading space.
// A chunk whose closing timestamp the decoder never wrote comes back with
// an end of -1 (timestamps.cpp): it ends where the next one starts, or
// with the audio.
func readTranscript(api *C.npud_ov_api, results *C.ov_genai_whisper_decoded_results, req *npu.TranscribeRequest) (npu.Transcript, error) {
	var out npu.Transcript
	var texts C.size_t
	if err := check(api, "ov_genai_whisper_decoded_results_get_texts_count", "", C.npud_whisper_texts(api, results, &texts)); err != nil {
		return out, err
	}
	if texts > 0 {
		text, err := whisperString(api, "ov_genai_whisper_decoded_results_get_text_at", func(buf *C.char, size *C.size_t) C.ov_status_e {
			return C.npud_whisper_text_at(api, results, 0, buf, size)
		})
		if err != nil {
			return out, err
		}
		out.Text = strings.TrimSpace(text)
	}
	var n C.size_t
	if err := check(api, "ov_genai_whisper_decoded_results_get_chunks_count", "", C.npud_whisper_chunks(api, results, &n)); err != nil {
		return out, err
	}
	for i := C.size_t(0); i < n; i++ {
		seg, err := readChunk(api, results, i)
		if err != nil {
			return out, err
		}
		out.Segments = append(out.Segments, seg)
	}
	duration := req.Seconds()
	for i := range out.Segments {
		s := &out.Segments[i]
		if s.End < 0 {
			s.End = duration
			if i+1 < len(out.Segments) {
				s.End = out.Segments[i+1].Start
			}
		}
		s.End = min(max(s.End, s.Start), duration)
	}
	if req.Task != npu.TaskTranslate {
		out.Language = req.Language // GenAI's C API does not say which it detected
	} else {
		out.Language = "en"
	}
	return out, nil
}

func readChunk(api *C.npud_ov_api, results *C.ov_genai_whisper_decoded_results, i C.size_t) (npu.Segment, error) {
	var chunk *C.ov_genai_whisper_decoded_result_chunk
	if err := check(api, "ov_genai_whisper_decoded_results_get_chunk_at", "", C.npud_whisper_chunk_at(api, results, i, &chunk)); err != nil {
		return npu.Segment{}, err
	}
	defer C.npud_whisper_chunk_free(api, chunk)
	var start, end C.float
	if err := check(api, "ov_genai_whisper_decoded_result_chunk_get_*_ts", "", C.npud_whisper_chunk_times(api, chunk, &start, &end)); err != nil {
		return npu.Segment{}, err
	}
	text, err := whisperString(api, "ov_genai_whisper_decoded_result_chunk_get_text", func(buf *C.char, size *C.size_t) C.ov_status_e {
		return C.npud_whisper_chunk_text(api, chunk, buf, size)
	})
	if err != nil {
		return npu.Segment{}, err
	}
	return npu.Segment{Start: float64(start), End: float64(end), Text: strings.TrimSpace(text)}, nil
}

// whisperString reads a string the C API's way: its size (with the NUL)
// first, then the text.
func whisperString(api *C.npud_ov_api, call string, get func(*C.char, *C.size_t) C.ov_status_e) (string, error) {
	var size C.size_t
	if err := check(api, call, "size", get(nil, &size)); err != nil {
		return "", err
	}
	if size == 0 || size > maxWhisperText {
		return "", fmt.Errorf("%s: a text of %d bytes", call, uint64(size))
	}
	buf := (*C.char)(C.malloc(size))
	defer C.free(unsafe.Pointer(buf))
	if err := check(api, call, "", get(buf, &size)); err != nil {
		return "", err
	}
	return C.GoString(buf), nil
}
