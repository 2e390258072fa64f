//go:build cgo

package openvino

/*
#include <stdint.h>
#include <stdlib.h>
#include "ovapi.h"

// Implemented in Go (callback.go).
extern int npudStreamChunk(uintptr_t handle, char* text);

// The streamer callback GenAI calls, from its own thread on CPU/GPU and from
// the generate caller's thread on NPU. args carries a runtime/cgo.Handle.
// It has the calling convention the header declares for callback_func
// (OPENVINO_C_API_CALLBACK: __cdecl on 32-bit Windows, where another
// default convention would corrupt the stack).
static ov_genai_streaming_status_e OPENVINO_C_API_CALLBACK npud_trampoline(const char* str, void* args) {
	return (ov_genai_streaming_status_e)npudStreamChunk((uintptr_t)args, (char*)str);
}
// The trampoline's type is exactly the header's callback type.
_Static_assert(__builtin_types_compatible_p(__typeof__(&npud_trampoline), __typeof__(((streamer_callback*)0)->callback_func)),
               "npud_trampoline must have streamer_callback's type");

// cgo cannot call variadic functions: fixed-arity shims for the pipeline
// constructors (LLM and VLM take the same arguments), with properties as
// parallel key and value arrays.
#define NPUD_CALL_CREATE(create) \
	switch (n) { \
	case 0: return create(path, device, 0, pipe); \
	case 1: return create(path, device, 2, pipe, k[0], v[0]); \
	case 2: return create(path, device, 4, pipe, k[0], v[0], k[1], v[1]); \
	case 3: return create(path, device, 6, pipe, k[0], v[0], k[1], v[1], k[2], v[2]); \
	case 4: return create(path, device, 8, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3]); \
	case 5: return create(path, device, 10, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4]); \
	case 6: return create(path, device, 12, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5]); \
	case 7: return create(path, device, 14, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6]); \
	case 8: return create(path, device, 16, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7]); \
	case 9: return create(path, device, 18, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8]); \
	case 10: return create(path, device, 20, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9]); \
	case 11: return create(path, device, 22, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10]); \
	case 12: return create(path, device, 24, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11]); \
	case 13: return create(path, device, 26, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12]); \
	case 14: return create(path, device, 28, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13]); \
	case 15: return create(path, device, 30, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14]); \
	case 16: return create(path, device, 32, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15]); \
	case 17: return create(path, device, 34, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16]); \
	case 18: return create(path, device, 36, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17]); \
	case 19: return create(path, device, 38, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18]); \
	case 20: return create(path, device, 40, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19]); \
	case 21: return create(path, device, 42, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20]); \
	case 22: return create(path, device, 44, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21]); \
	case 23: return create(path, device, 46, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22]); \
	case 24: return create(path, device, 48, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23]); \
	case 25: return create(path, device, 50, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24]); \
	case 26: return create(path, device, 52, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25]); \
	case 27: return create(path, device, 54, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26]); \
	case 28: return create(path, device, 56, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26], k[27], v[27]); \
	case 29: return create(path, device, 58, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26], k[27], v[27], k[28], v[28]); \
	case 30: return create(path, device, 60, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26], k[27], v[27], k[28], v[28], k[29], v[29]); \
	case 31: return create(path, device, 62, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26], k[27], v[27], k[28], v[28], k[29], v[29], k[30], v[30]); \
	case 32: return create(path, device, 64, pipe, k[0], v[0], k[1], v[1], k[2], v[2], k[3], v[3], k[4], v[4], k[5], v[5], k[6], v[6], k[7], v[7], k[8], v[8], k[9], v[9], k[10], v[10], k[11], v[11], k[12], v[12], k[13], v[13], k[14], v[14], k[15], v[15], k[16], v[16], k[17], v[17], k[18], v[18], k[19], v[19], k[20], v[20], k[21], v[21], k[22], v[22], k[23], v[23], k[24], v[24], k[25], v[25], k[26], v[26], k[27], v[27], k[28], v[28], k[29], v[29], k[30], v[30], k[31], v[31]); \
	} \
	return INVALID_C_PARAM;

static ov_status_e npud_pipeline_create_unguarded(const npud_ov_api* api, const char* path, const char* device, const char** k,
                                                  const char** v, size_t n, ov_genai_llm_pipeline** pipe) {
	NPUD_CALL_CREATE(api->ov_genai_llm_pipeline_create)
}

static ov_status_e npud_vlm_pipeline_create_unguarded(const npud_ov_api* api, const char* path, const char* device, const char** k,
                                                      const char** v, size_t n, ov_genai_vlm_pipeline** pipe) {
	NPUD_CALL_CREATE(api->ov_genai_vlm_pipeline_create)
}

// A pipeline's constructor builds its own core and plugins: the CPU
// plugin swaps the calling thread's signal stack (npud_sigstack_save,
// ovapi.h), which this thread, a Go runtime thread, must get back.
static ov_status_e npud_pipeline_create(const npud_ov_api* api, const char* path, const char* device, const char** k,
                                        const char** v, size_t n, ov_genai_llm_pipeline** pipe) {
	npud_sigstack own;
	npud_sigstack_save(&own);
	ov_status_e st = npud_pipeline_create_unguarded(api, path, device, k, v, n, pipe);
	npud_sigstack_restore(&own);
	return st;
}

static ov_status_e npud_vlm_pipeline_create(const npud_ov_api* api, const char* path, const char* device, const char** k,
                                            const char** v, size_t n, ov_genai_vlm_pipeline** pipe) {
	npud_sigstack own;
	npud_sigstack_save(&own);
	ov_status_e st = npud_vlm_pipeline_create_unguarded(api, path, device, k, v, n, pipe);
	npud_sigstack_restore(&own);
	return st;
}

// A generation's results: an LLM pipeline's or a VLM pipeline's, which
// have the same accessors under other names.
typedef struct {
	ov_genai_decoded_results* llm;
	ov_genai_vlm_decoded_results* vlm;
} npud_results;

static ov_status_e npud_results_metrics(const npud_ov_api* api, npud_results r, ov_genai_perf_metrics** m) {
	if (r.vlm) return api->ov_genai_vlm_decoded_results_get_perf_metrics(r.vlm, m);
	return api->ov_genai_decoded_results_get_perf_metrics(r.llm, m);
}

static void npud_results_metrics_free(const npud_ov_api* api, npud_results r, ov_genai_perf_metrics* m) {
	if (r.vlm) api->ov_genai_vlm_decoded_results_perf_metrics_free(m);
	else api->ov_genai_decoded_results_perf_metrics_free(m);
}

static ov_status_e npud_results_string(const npud_ov_api* api, npud_results r, char* out, size_t* size) {
	if (r.vlm) return api->ov_genai_vlm_decoded_results_get_string(r.vlm, out, size);
	return api->ov_genai_decoded_results_get_string(r.llm, out, size);
}

static void npud_results_free(const npud_ov_api* api, npud_results r) {
	if (r.vlm) api->ov_genai_vlm_decoded_results_free(r.vlm);
	if (r.llm) api->ov_genai_decoded_results_free(r.llm);
}

// The streamer struct lives on this C frame for the whole synchronous call.
// A VLM pipeline (vlm set) takes the images' tensors.
static ov_status_e npud_generate(const npud_ov_api* api, ov_genai_llm_pipeline* pipe, ov_genai_vlm_pipeline* vlm,
                                 const char* input, const ov_genai_chat_history* history,
                                 const ov_tensor_t** images, size_t num_images,
                                 const ov_genai_generation_config* config, uintptr_t handle, npud_results* results) {
	streamer_callback streamer = {npud_trampoline, (void*)handle};
	if (vlm && history)
		return api->ov_genai_vlm_pipeline_generate_with_history(vlm, history, images, num_images, config, &streamer, &results->vlm);
	if (vlm) return api->ov_genai_vlm_pipeline_generate(vlm, input, images, num_images, config, &streamer, &results->vlm);
	if (history) return api->ov_genai_llm_pipeline_generate_with_history(pipe, history, config, &streamer, &results->llm);
	return api->ov_genai_llm_pipeline_generate(pipe, input, config, &streamer, &results->llm);
}

static ov_status_e npud_get_generation_config(const npud_ov_api* api, ov_genai_llm_pipeline* pipe,
                                              ov_genai_vlm_pipeline* vlm, ov_genai_generation_config** config) {
	if (vlm) return api->ov_genai_vlm_pipeline_get_generation_config(vlm, config);
	return api->ov_genai_llm_pipeline_get_generation_config(pipe, config);
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime/cgo"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
	"github.com/npud/npud/npu/modelstore"
)

// maxProperties is what the constructor shim accepts.
const maxProperties = 32

// StatusError is a failed C call. GenAI reports every failure as
// UNKNOW_EXCEPTION (-17) without a message, so the error names the call and
// its input.
type StatusError struct {
	Call   string
	Input  string
	Status int
	// Message is OpenVINO's text for Status (ov_get_error_info).
	Message string
	// BeforeOutput is set when a generate failed before streaming anything.
	BeforeOutput bool
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s(%s): OpenVINO status %d (%s)", e.Call, e.Input, e.Status, e.Message)
}

func check(api *C.npud_ov_api, call, input string, status C.ov_status_e) error {
	if status == C.OK {
		return nil
	}
	return &StatusError{Call: call, Input: input, Status: int(status),
		Message: C.GoString(C.npud_ov_get_error_info(api, status))}
}

// errorText is the library's text for an OpenVINO status (ov_get_error_info).
func (l *Library) errorText(status int) string {
	return C.GoString(C.npud_ov_get_error_info(l.api, C.ov_status_e(status)))
}

// property is one pipeline property, such as MAX_PROMPT_LEN.
type property struct{ key, value string }

// pipeline is one GenAI LLMPipeline: one model compiled for one device.
type pipeline struct {
	api *C.npud_ov_api // the library the pipeline came from
	ptr *C.ov_genai_llm_pipeline
	vlm *C.ov_genai_vlm_pipeline // a vision-language model's pipeline instead of ptr
	// whisper: a speech model's pipeline instead of ptr; it only transcribes.
	whisper *C.ov_genai_whisper_pipeline
	// embed: an embedding model on OpenVINO's core instead of a GenAI
	// pipeline; it only embeds.
	embed *embedder
	// rerank: a cross-encoder on OpenVINO's core (embed holds its compiled
	// IR, which free closes); it only reranks.
	rerank *reranker
	model  string
	device string
	busy   atomic.Bool // GenAI pipelines are not safe for concurrent generate
	// prompt: npud renders and counts this model's prompts itself, and the
	// pipeline reads the model through its prompt view; nil: GenAI renders
	// them from the messages.
	prompt *prompter
	// chatTemplate: the model has a chat template. Then every request goes
	// through generate_with_history (a prompt as one user message, which is
	// what GenAI's plain generate would template it as), so the stateful
	// pipeline never switches input types ("Chat doesn't support switching
	// between input types" until finish_chat). Without one, only plain
	// generate is used and chat requests are refused.
	chatTemplate bool
	// context is the model's own context length (config.json), 0 if unknown.
	context int
	// On the NPU: MAX_PROMPT_LEN and MIN_RESPONSE_LEN as GenAI was given
	// them (its prompt check and KV cache, utils.cpp).
	promptLimit, responseLen int
	// toolsInSystem: the model's family (npu/chatfmt) reads its tools from
	// the system message, not its template's tools variable.
	toolsInSystem bool
	// stateful: on CPU/GPU, GenAI built its stateful pipeline (SDPA)
	// rather than continuous batching: it keeps the KV cache between
	// generates and counts only the new part of a continued history. The
	// NPU's stateful pipeline prefills and counts the whole history every
	// time (pipeline_stateful.cpp: m_use_full_chat_history), so it is not
	// stateful in this sense.
	stateful bool
	// conversation: what the stateful pipeline's KV cache holds; touched
	// only by the goroutine that holds busy.
	conversation conversation
	// kept: a VLM pipeline's chat history, kept while the conversation
	// continues; touched only by the goroutine that holds busy.
	kept keptChat
	// counted: the last history GenAI counted whole (the NPU), to bound
	// what a history continuing it can count; touched only by the
	// goroutine that holds busy.
	counted countedHistory
}

// keptChat is a VLM pipeline's ChatHistory kept for the next turn. GenAI
// keeps what it encoded of a conversation's images in state attached to
// the ChatHistory object, and gives the images passed with a generate to
// the last user message (visual_language/vlm_chat_context.cpp,
// chat_history_state.cpp): with a new ChatHistory every turn, every image
// is encoded again and all of them belong to the last question. When a
// request continues the kept history (its messages, the same extra
// context and tools), its new messages are appended to it and only their
// images are passed.
type keptChat struct {
	history *C.ov_genai_chat_history
	msgs    []npu.Message
	key     string // the extra context and tools it was made with
}

func (p *pipeline) dropKept() {
	if p.kept.history != nil {
		C.npud_ov_genai_chat_history_free(p.api, p.kept.history)
	}
	p.kept = keptChat{}
}

// vlmHistory is the chat history for msgs on a VLM pipeline, and the
// messages whose images go with this generate.
func (p *pipeline) vlmHistory(msgs []npu.Message, req *npu.Request) (*C.ov_genai_chat_history, []npu.Message, error) {
	key := historyKey(req)
	if p.kept.history != nil && p.kept.key == key && continues(p.kept.msgs, msgs) {
		rest := msgs[len(p.kept.msgs):]
		ok := true
		for _, m := range rest {
			b, err := json.Marshal(templateMessage(m))
			if err != nil || pushMessage(p.api, p.kept.history, b) != nil {
				ok = false
				break
			}
		}
		if ok {
			return p.kept.history, rest, nil
		}
	}
	p.dropKept()
	h, err := chatHistory(p.api, msgs, req, p.toolsInSystem)
	if err != nil {
		return nil, nil, err
	}
	p.kept = keptChat{history: h, key: key}
	return h, msgs, nil
}

// historyKey is what a chat history holds besides its messages.
func historyKey(req *npu.Request) string {
	b, _ := json.Marshal(struct {
		Think      *bool
		ThinkLevel string
		Tools      []npu.Tool
	}{req.Think, req.ThinkLevel, req.Tools})
	return string(b)
}

// countedHistory is a history GenAI ran and counted, and the answer it
// generated after it.
type countedHistory struct {
	history      []npu.Message
	promptTokens int
	answer       string
	answerTokens int
}

// upperBound bounds the tokens of msgs when they continue the counted
// history: its count, the answer's when the next message is that answer,
// and for every other new message its bytes (a token covers at least one
// byte) and what a template adds per message. ok is false when msgs does
// not continue it.
func (c *countedHistory) upperBound(msgs []npu.Message) (n int, ok bool) {
	if !continues(c.history, msgs) {
		return 0, false
	}
	n = c.promptTokens
	rest := msgs[len(c.history):]
	// The client got the answer's text with an incomplete code point
	// replaced, as the bridge passes it.
	if len(rest) > 0 && rest[0].Role == "assistant" && len(rest[0].ToolCalls) == 0 &&
		rest[0].Content == strings.ToValidUTF8(c.answer, "\uFFFD") {
		n += c.answerTokens + templateTokensPerMessage
		rest = rest[1:]
	}
	for _, m := range rest {
		n += len(m.Content) + templateTokensPerMessage
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments) + templateTokensPerMessage
		}
	}
	return n, true
}

// newPipeline compiles the model in dir for device. On CPU/GPU an LLM is
// asked for paged attention explicitly (ATTENTION_BACKEND=PA) unless the
// properties choose: GenAI otherwise falls back to its stateful pipeline
// quietly when paged attention fails to start (src/cpp/src/llm/pipeline.cpp),
// and the stateful pipeline counts prompt tokens differently. An explicit
// PA fails instead, and the pipeline is compiled again with SDPA, so npud
// knows which one runs.
func newPipeline(api *C.npud_ov_api, dir, device string, props []property) (*pipeline, error) {
	if modelstore.IsSpeechModel(dir) {
		return compileWhisper(api, dir, device, props)
	}
	if deviceKind(device) == "NPU" || modelstore.HasVisionEncoder(dir) {
		return compilePipeline(api, dir, device, props)
	}
	for _, pr := range props {
		if pr.key == "ATTENTION_BACKEND" {
			p, err := compilePipeline(api, dir, device, props)
			if err == nil {
				p.stateful = pr.value == "SDPA"
			}
			return p, err
		}
	}
	p, err := compilePipeline(api, dir, device, append(slices.Clone(props), property{"ATTENTION_BACKEND", "PA"}))
	if err == nil {
		return p, nil
	}
	p, sdpaErr := compilePipeline(api, dir, device, append(slices.Clone(props), property{"ATTENTION_BACKEND", "SDPA"}))
	if sdpaErr != nil {
		return nil, errors.Join(err, sdpaErr)
	}
	p.stateful = true
	return p, nil
}

// createArgs are a pipeline constructor's arguments in C memory: the model
// folder, the device, and the properties as two arrays of keys and values
// (max entries, NULL past the last); input says what was asked, for
// errors. free releases them after the call.
type createArgs struct {
	dir, device *C.char
	keys, vals  **C.char
	input       string
	strings     []*C.char
}

func newCreateArgs(dir, device string, props []property, max int) *createArgs {
	a := &createArgs{dir: C.CString(dir), device: C.CString(device),
		keys:  (**C.char)(C.calloc(C.size_t(max), C.size_t(unsafe.Sizeof((*C.char)(nil))))),
		vals:  (**C.char)(C.calloc(C.size_t(max), C.size_t(unsafe.Sizeof((*C.char)(nil))))),
		input: fmt.Sprintf("model %q, device %q", dir, device)}
	ks, vs := unsafe.Slice(a.keys, max), unsafe.Slice(a.vals, max)
	for i, p := range props {
		ks[i], vs[i] = C.CString(p.key), C.CString(p.value)
		a.strings = append(a.strings, ks[i], vs[i])
		a.input += fmt.Sprintf(", %s=%s", p.key, p.value)
	}
	return a
}

func (a *createArgs) free() {
	for _, s := range a.strings {
		C.free(unsafe.Pointer(s))
	}
	C.free(unsafe.Pointer(a.dir))
	C.free(unsafe.Pointer(a.device))
	C.free(unsafe.Pointer(a.keys))
	C.free(unsafe.Pointer(a.vals))
}

// compilePipeline creates GenAI's pipeline for the model in dir.
func compilePipeline(api *C.npud_ov_api, dir, device string, props []property) (*pipeline, error) {
	if len(props) > maxProperties {
		return nil, fmt.Errorf("%d pipeline properties: at most %d are supported", len(props), maxProperties)
	}
	args := newCreateArgs(dir, device, props, maxProperties)
	defer args.free()
	cdir, cdev, keys, vals, input := args.dir, args.device, args.keys, args.vals, args.input
	p := &pipeline{api: api, model: dir, device: device, chatTemplate: modelstore.HasChatTemplate(dir), context: modelstore.ModelContext(dir),
		toolsInSystem: toolsInSystemMessage(modelstore.Describe(dir, filepath.Base(dir)).ToolFormat)}
	if modelstore.HasVisionEncoder(dir) {
		// A vision-language model: GenAI's VLM pipeline, which the LLM
		// pipeline cannot load (its language model has another file name).
		if api.vision_missing != nil {
			return nil, fmt.Errorf("model %q has a vision encoder, and the OpenVINO GenAI library lacks %s: vision models need GenAI 2026.3 or later",
				filepath.Base(dir), C.GoString(api.vision_missing))
		}
		if err := check(api, "ov_genai_vlm_pipeline_create", input,
			C.npud_vlm_pipeline_create(api, cdir, cdev, keys, vals, C.size_t(len(props)), &p.vlm)); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := check(api, "ov_genai_llm_pipeline_create", input,
		C.npud_pipeline_create(api, cdir, cdev, keys, vals, C.size_t(len(props)), &p.ptr)); err != nil {
		return nil, err
	}
	return p, nil
}

// free releases the native pipeline. GenAI frees whatever the pipeline is
// doing, so a free during a generate is a use-after-free: refuse it loudly
// instead. Claiming busy for good also keeps any later generate out.
func (p *pipeline) free() error {
	api := p.api
	if !p.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("openvino: refusing to free the pipeline of %q on %s while it generates", p.model, p.device)
	}
	p.dropKept()
	if p.embed != nil {
		err := p.embed.close()
		p.embed = nil
		return err
	}
	if p.whisper != nil {
		freeWhisper(api, p.whisper)
		p.whisper = nil
		return nil
	}
	if p.vlm != nil {
		C.npud_ov_genai_vlm_pipeline_free(api, p.vlm)
		p.vlm = nil
		return nil
	}
	C.npud_ov_genai_llm_pipeline_free(api, p.ptr)
	p.ptr = nil
	if p.prompt != nil {
		err := p.prompt.close()
		p.prompt = nil
		return err
	}
	return nil
}

// streamState is what a cgo.Handle carries to the callback.
type streamState struct {
	sink  npu.Sink
	calls atomic.Int64
	// stoppedAt is the number of calls up to the first one the sink
	// answered STOP or CANCEL (0: never), sentBytes the text the sink took
	// up to and including that call. GenAI on CPU/GPU keeps generating for
	// a while after STOP and counts those tokens; the final flush after it
	// carries text the bridge no longer passes on. Usage counts what the
	// client got (see deliveredTokens).
	stoppedAt atomic.Int64
	sentBytes atomic.Int64
	// panicked holds what a panic in the sink carried: the generation was
	// cancelled and must end as an engine error, not as a clean stop.
	panicked atomic.Value
}

// generate runs one generation, streaming into sink. It holds the calling
// goroutine's OS thread for the whole native call; on NPU the callbacks
// arrive on that same thread, on CPU/GPU on GenAI's streamer thread.
//
// maxNewCap bounds max_new_tokens when the request sets no max_tokens
// (GenAI's default is SIZE_MAX: a generation could hold the engine for
// ever); 0 leaves the model's default.
func (p *pipeline) generate(ctx context.Context, req *npu.Request, sink npu.Sink, maxNewCap int) (npu.Result, error) {
	if !p.busy.CompareAndSwap(false, true) {
		return npu.Result{}, errors.New("openvino: concurrent generate on one pipeline (the scheduler must serialise them)")
	}
	defer p.busy.Store(false)
	api := p.api
	done := false
	defer func() {
		if !done {
			p.conversation = conversation{} // what the cache holds after a failure is unknown
		}
	}()

	config, maxNew, err := p.config(req, maxNewCap)
	if err != nil {
		return npu.Result{}, err
	}
	defer C.npud_ov_genai_generation_config_free(api, config)
	// The backstop of npu.Request.Validate: GenAI's own rules, applied to
	// the request merged with the model's defaults. generate would assert the
	// same later, as an anonymous -17.
	if C.npud_ov_genai_generation_config_validate(api, config) != C.OK {
		return npu.Result{}, &npu.InvalidRequestError{Message: fmt.Sprintf(
			"the generation settings are outside what OpenVINO GenAI accepts for model %q (with its generation_config.json)", p.model)}
	}

	var history *C.ov_genai_chat_history
	var input *C.char
	msgs := req.Messages
	if len(msgs) > 0 && !p.chatTemplate {
		return npu.Result{}, &npu.InvalidRequestError{Param: "messages", Message: fmt.Sprintf(
			"model %q has no chat template (GenAI looks in tokenizer_config.json, chat_template.jinja and the tokenizer IR), "+
				"so it cannot take chat messages: send a plain prompt", filepath.Base(p.model))}
	}
	if len(msgs) == 0 && p.chatTemplate && p.prompt == nil {
		msgs = []npu.Message{{Role: "user", Content: req.Prompt}}
	}
	imageMsgs := msgs
	switch {
	case len(msgs) > 0 && p.vlm != nil:
		if history, imageMsgs, err = p.vlmHistory(msgs, req); err != nil {
			return npu.Result{}, err
		}
		defer func() {
			if done {
				p.kept.msgs = slices.Clone(msgs)
			} else {
				p.dropKept() // what GenAI made of it after a failure is unknown
			}
		}()
	case len(msgs) > 0:
		if history, err = chatHistory(api, msgs, req, p.toolsInSystem); err != nil {
			return npu.Result{}, err
		}
		defer C.npud_ov_genai_chat_history_free(api, history)
	default:
		input = C.CString(req.Prompt)
		defer C.free(unsafe.Pointer(input))
	}

	var images imageTensors
	if p.vlm != nil {
		if images, err = newImageTensors(api, imageMsgs); err != nil {
			return npu.Result{}, err
		}
		defer images.free(api)
	} else if hasImages(msgs) {
		return npu.Result{}, &npu.InvalidRequestError{Param: "images", Message: fmt.Sprintf(
			"model %q does not support images: its folder holds no vision encoder", filepath.Base(p.model))}
	}

	state := &streamState{sink: sink}
	handle := cgo.NewHandle(state)
	defer handle.Delete() // owned by this call; the native call has returned by then

	var results C.npud_results
	start := time.Now()
	status := C.npud_generate(api, p.ptr, p.vlm, input, history, images.list(), C.size_t(images.n), config, C.uintptr_t(handle), &results)
	elapsed := time.Since(start)
	if status == C.OK {
		defer C.npud_results_free(api, results)
	}
	if v := state.panicked.Load(); v != nil {
		return npu.Result{}, fmt.Errorf("the stream callback panicked, so the generation was cancelled: %w: %v", npu.ErrPanic, v)
	}
	if err := check(api, "ov_genai_llm_pipeline_generate", fmt.Sprintf("model %q, device %q", p.model, p.device), status); err != nil {
		var statusErr *StatusError
		if errors.As(err, &statusErr) {
			statusErr.BeforeOutput = state.calls.Load() == 0
		}
		return npu.Result{}, err
	}
	res, err := resultOf(api, results, maxNew, elapsed)
	if err != nil {
		return npu.Result{}, err
	}
	generated := res.CompletionTokens
	if state.stoppedAt.Load() > 0 {
		res.CompletionTokens = deliveredTokens(generated, int(state.sentBytes.Load()), generatedBytes(api, results))
	}
	prefilled := res.PromptTokens
	res.PromptTokens = p.conversation.account(msgs, history != nil && p.stateful, prefilled, generated)
	if history != nil && !p.stateful {
		p.counted = countedHistory{history: slices.Clone(msgs), promptTokens: prefilled,
			answer: generatedText(api, results), answerTokens: generated}
	}
	res.CachedPromptTokens = res.PromptTokens - prefilled
	done = true
	return res, nil
}

// deliveredTokens estimates how many of the generated tokens reached the
// client when the sink stopped the generation: GenAI counts every token it
// generated, the streamer holds the last ones back (TextStreamer delays
// three tokens and incomplete code points), and CPU/GPU go on generating
// until they see the STOP. Without a tokenizer in the C API the share of
// the generated text the sink took before it answered STOP stands in for
// the share of tokens. When the sink took everything the count is exact.
func deliveredTokens(generated, sentBytes, totalBytes int) int {
	if totalBytes <= 0 || sentBytes >= totalBytes || generated <= 0 {
		return generated
	}
	n := (generated*sentBytes + totalBytes - 1) / totalBytes
	return max(n, min(sentBytes, 1))
}

// generatedText is the text GenAI generated, "" when it cannot say.
func generatedText(api *C.npud_ov_api, results C.npud_results) string {
	var size C.size_t
	if C.npud_results_string(api, results, nil, &size) != C.OK || size == 0 || size > 1<<24 {
		return ""
	}
	buf := (*C.char)(C.malloc(size))
	defer C.free(unsafe.Pointer(buf))
	if C.npud_results_string(api, results, buf, &size) != C.OK {
		return ""
	}
	return C.GoString(buf)
}

// generatedBytes is the length of the text GenAI generated (every token's,
// streamed or not), -1 when it cannot say.
func generatedBytes(api *C.npud_ov_api, results C.npud_results) int {
	var size C.size_t
	if C.npud_results_string(api, results, nil, &size) != C.OK || size == 0 {
		return -1
	}
	return int(size) - 1 // the size counts the terminating NUL
}

// conversation is what a CPU/GPU stateful pipeline's KV cache holds:
// GenAI keeps the cache of the last history it ran and, when the next
// history extends it (pipeline_stateful.cpp: is_history_continuation),
// prefills only the new part and counts only that as input tokens. Usage
// reports the whole prompt, so the binding keeps the count of what is
// cached. Not on the NPU: there GenAI prefills and counts the whole
// history every time.
type conversation struct {
	history []npu.Message
	tokens  int // the cached history's prompt tokens plus the answer generated after it
}

// account returns the prompt's whole token count for a generation that
// reported prefilled input tokens and generated more, and remembers what
// the cache now holds. Only the generation's own goroutine calls it (the
// pipeline is busy), so it needs no lock.
func (c *conversation) account(msgs []npu.Message, stateful bool, prefilled, generated int) int {
	if !stateful {
		c.history, c.tokens = nil, 0
		return prefilled
	}
	total := prefilled
	if continues(c.history, msgs) {
		total += c.tokens
	}
	c.history, c.tokens = slices.Clone(msgs), total+generated
	return total
}

// continues is GenAI's rule: more messages, and every earlier one equal.
func continues(cached, next []npu.Message) bool {
	return len(cached) > 0 && len(next) > len(cached) && slices.EqualFunc(cached, next[:len(cached)], npu.Message.Equal)
}

// config starts from the pipeline's own defaults (the model's
// generation_config.json) and applies the request.
func (p *pipeline) config(req *npu.Request, maxNewCap int) (*C.ov_genai_generation_config, int, error) {
	api := p.api
	var cfg *C.ov_genai_generation_config
	if err := check(api, "ov_genai_llm_pipeline_get_generation_config", p.model,
		C.npud_get_generation_config(api, p.ptr, p.vlm, &cfg)); err != nil {
		return nil, 0, err
	}
	ok := false
	defer func() {
		if !ok {
			C.npud_ov_genai_generation_config_free(api, cfg)
		}
	}()
	s := req.Sampling
	set := func(name string, status C.ov_status_e) error {
		return check(api, "ov_genai_generation_config_set_"+name, p.model, status)
	}
	var errs []error
	if req.MaxTokens > 0 {
		errs = append(errs, set("max_new_tokens", C.npud_ov_genai_generation_config_set_max_new_tokens(api, cfg, C.size_t(req.MaxTokens))))
	} else if maxNewCap > 0 {
		var def C.size_t
		errs = append(errs, check(api, "ov_genai_generation_config_get_max_new_tokens", p.model,
			C.npud_ov_genai_generation_config_get_max_new_tokens(api, cfg, &def)))
		if uint64(def) > uint64(maxNewCap) {
			errs = append(errs, set("max_new_tokens", C.npud_ov_genai_generation_config_set_max_new_tokens(api, cfg, C.size_t(maxNewCap))))
		}
	}
	// Temperature 0 means greedy; sampling parameters only matter when
	// do_sample is on.
	sampling := s.Temperature == nil || *s.Temperature > 0
	if s.Temperature != nil || s.TopP != nil || s.TopK != nil || s.MinP != nil {
		errs = append(errs, set("do_sample", C.npud_ov_genai_generation_config_set_do_sample(api, cfg, C.bool(sampling))))
	}
	if sampling {
		if s.Temperature != nil {
			errs = append(errs, set("temperature", C.npud_ov_genai_generation_config_set_temperature(api, cfg, C.float(*s.Temperature))))
		}
		if s.TopP != nil {
			errs = append(errs, set("top_p", C.npud_ov_genai_generation_config_set_top_p(api, cfg, C.float(*s.TopP))))
		}
		if s.TopK != nil {
			errs = append(errs, set("top_k", C.npud_ov_genai_generation_config_set_top_k(api, cfg, topK(*s.TopK))))
		}
		if s.MinP != nil {
			errs = append(errs, set("min_p", C.npud_ov_genai_generation_config_set_min_p(api, cfg, C.float(*s.MinP))))
		}
	}
	if s.RepetitionPenalty != nil {
		errs = append(errs, set("repetition_penalty", C.npud_ov_genai_generation_config_set_repetition_penalty(api, cfg, C.float(*s.RepetitionPenalty))))
	}
	if s.PresencePenalty != nil {
		errs = append(errs, set("presence_penalty", C.npud_ov_genai_generation_config_set_presence_penalty(api, cfg, C.float(*s.PresencePenalty))))
	}
	if s.FrequencyPenalty != nil {
		errs = append(errs, set("frequency_penalty", C.npud_ov_genai_generation_config_set_frequency_penalty(api, cfg, C.float(*s.FrequencyPenalty))))
	}
	// GenAI re-seeds its generator with rng_seed (default 0) on every
	// generate: without a seed of its own every sampled request would give
	// the same text. A seed makes a request reproducible.
	seed := rand.Uint64()
	if s.Seed != nil {
		seed = uint64(*s.Seed)
	}
	errs = append(errs, set("rng_seed", C.npud_ov_genai_generation_config_set_rng_seed(api, cfg, C.size_t(seed))))
	if len(req.Stop) > 0 {
		errs = append(errs, setStopStrings(api, cfg, req.Stop, p.model))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	var maxNew C.size_t
	if err := check(api, "ov_genai_generation_config_get_max_new_tokens", p.model,
		C.npud_ov_genai_generation_config_get_max_new_tokens(api, cfg, &maxNew)); err != nil {
		return nil, 0, err
	}
	ok = true
	return cfg, int(min(uint64(maxNew), 1<<31)), nil
}

func setStopStrings(api *C.npud_ov_api, cfg *C.ov_genai_generation_config, stops []string, model string) error {
	arr := (**C.char)(C.calloc(C.size_t(len(stops)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(arr))
	items := unsafe.Slice(arr, len(stops))
	for i, s := range stops {
		items[i] = C.CString(s)
		defer C.free(unsafe.Pointer(items[i]))
	}
	return check(api, "ov_genai_generation_config_set_stop_strings", model,
		C.npud_ov_genai_generation_config_set_stop_strings(api, cfg, arr, C.size_t(len(stops))))
}

// chatHistory builds a ChatHistory from messages, each a properly escaped
// JSON object.
func chatHistory(api *C.npud_ov_api, msgs []npu.Message, req *npu.Request, toolsInSystem bool) (*C.ov_genai_chat_history, error) {
	var h *C.ov_genai_chat_history
	if st := C.npud_ov_genai_chat_history_create(api, &h); st != C.OV_GENAI_CHAT_HISTORY_OK {
		return nil, fmt.Errorf("ov_genai_chat_history_create: status %d", int(st))
	}
	if req.Think != nil {
		// The chat template's own switch (Qwen3's enable_thinking), and the
		// level for templates that take one.
		extra := map[string]any{"enable_thinking": *req.Think}
		if req.ThinkLevel != "" {
			extra["reasoning_effort"] = req.ThinkLevel
		}
		if err := setExtraContext(api, h, extra); err != nil {
			C.npud_ov_genai_chat_history_free(api, h)
			return nil, err
		}
	}
	if len(req.Tools) > 0 && !toolsInSystem {
		// The template renders them, in the shape Hugging Face templates
		// read: [{"type": "function", "function": {...}}]. Not for a
		// family whose template reads them from the system message only
		// (Phi-4-mini): GenAI renders with minja, which, given tools for a template
		// that does not render its tools variable, polyfills them into the
		// system message and rebuilds that message as role and content
		// only, dropping its "tools" (minja chat-template.hpp: apply,
		// add_system; GenAI tokenizer_impl.cpp apply_chat_template).
		b, err := json.Marshal(templateTools(req.Tools))
		if err == nil {
			err = withJSON(api, b, "ov_genai_chat_history_set_tools", func(js *C.ov_genai_json_container) C.ov_genai_chat_history_status_e {
				return C.npud_ov_genai_chat_history_set_tools(api, h, js)
			})
		}
		if err != nil {
			C.npud_ov_genai_chat_history_free(api, h)
			return nil, err
		}
	}
	msgs = withSystemTools(msgs, req.Tools, toolsInSystem)
	for i, m := range msgs {
		tm := templateMessage(m)
		if i == 0 && m.Role == "system" && len(req.Tools) > 0 && toolsInSystem {
			// Such a template (Phi-4-mini's) reads the tools from the
			// system message, as a JSON string, not from its tools
			// variable.
			b, _ := json.Marshal(templateTools(req.Tools)) // built from JSON values: always encodes
			tm["tools"] = string(b)
		}
		b, err := json.Marshal(tm)
		if err != nil {
			C.npud_ov_genai_chat_history_free(api, h)
			return nil, fmt.Errorf("encoding message %d: %w", i, err)
		}
		if err := pushMessage(api, h, b); err != nil {
			C.npud_ov_genai_chat_history_free(api, h)
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
	}
	return h, nil
}

// toolsInSystemMessage asks the model's family (ModelDetails.ToolFormat)
// whether its template reads the tools from the system message.
func toolsInSystemMessage(family string) bool {
	f := chatfmt.Lookup(family)
	return f != nil && f.ToolsInSystemMessage()
}

// withSystemTools makes sure a family that reads its tools from the system
// message (Phi-4-mini) has one to read them from.
func withSystemTools(msgs []npu.Message, tools []npu.Tool, toolsInSystem bool) []npu.Message {
	if len(tools) == 0 || !toolsInSystem || (len(msgs) > 0 && msgs[0].Role == "system") {
		return msgs
	}
	return append([]npu.Message{{Role: "system", Content: "You are a helpful assistant with some tools."}}, msgs...)
}

// templateTools are tools as chat templates expect them.
func templateTools(tools []npu.Tool) []map[string]any {
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		fn := map[string]any{"name": t.Name, "description": t.Description}
		if len(t.Parameters) > 0 {
			fn["parameters"] = t.Parameters
		} else {
			fn["parameters"] = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out[i] = map[string]any{"type": "function", "function": fn}
	}
	return out
}

// templateMessage is a message as chat templates read it: an assistant's
// calls with their arguments as an object (templates apply tojson to
// them; a string would come out quoted), a tool result with the id and
// name of the call it answers.
func templateMessage(m npu.Message) map[string]any {
	out := map[string]any{"role": m.Role, "content": m.Content}
	if len(m.ToolCalls) > 0 {
		calls := make([]map[string]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			var args any = c.Arguments
			var obj map[string]any
			if json.Unmarshal([]byte(c.Arguments), &obj) == nil {
				args = obj
			}
			call := map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
			if c.ID != "" {
				call["id"] = c.ID
			}
			calls[i] = call
		}
		out["tool_calls"] = calls
	}
	if m.ToolCallID != "" {
		out["tool_call_id"] = m.ToolCallID
	}
	if m.ToolName != "" {
		out["name"] = m.ToolName
	}
	return out
}

// setExtraContext gives the chat template extra variables.
func setExtraContext(api *C.npud_ov_api, h *C.ov_genai_chat_history, extra map[string]any) error {
	b, err := json.Marshal(extra)
	if err != nil {
		return err
	}
	return withJSON(api, b, "ov_genai_chat_history_set_extra_context", func(js *C.ov_genai_json_container) C.ov_genai_chat_history_status_e {
		return C.npud_ov_genai_chat_history_set_extra_context(api, h, js)
	})
}

func pushMessage(api *C.npud_ov_api, h *C.ov_genai_chat_history, msg []byte) error {
	return withJSON(api, msg, "ov_genai_chat_history_push_back", func(js *C.ov_genai_json_container) C.ov_genai_chat_history_status_e {
		return C.npud_ov_genai_chat_history_push_back(api, h, js)
	})
}

// withJSON makes a JSON container of b for one chat history call, which
// copies it; the container is freed after.
func withJSON(api *C.npud_ov_api, b []byte, call string, use func(*C.ov_genai_json_container) C.ov_genai_chat_history_status_e) error {
	cs := C.CString(string(b))
	defer C.free(unsafe.Pointer(cs))
	var js *C.ov_genai_json_container
	if st := C.npud_ov_genai_json_container_create_from_json_string(api, &js, cs); st != C.OV_GENAI_JSON_CONTAINER_OK {
		return fmt.Errorf("ov_genai_json_container_create_from_json_string: status %d", int(st))
	}
	defer C.npud_ov_genai_json_container_free(api, js)
	if st := use(js); st != C.OV_GENAI_CHAT_HISTORY_OK {
		return fmt.Errorf("%s: status %d", call, int(st))
	}
	return nil
}

// resultOf reads the perf metrics into the engine result.
func resultOf(api *C.npud_ov_api, results C.npud_results, maxNew int, elapsed time.Duration) (npu.Result, error) {
	var m *C.ov_genai_perf_metrics
	if err := check(api, "ov_genai_decoded_results_get_perf_metrics", "", C.npud_results_metrics(api, results, &m)); err != nil {
		return npu.Result{}, err
	}
	defer C.npud_results_metrics_free(api, results, m)
	var in, out C.size_t
	var ttft, ttftStd, gen, genStd C.float
	err := errors.Join(
		check(api, "ov_genai_perf_metrics_get_num_input_tokens", "", C.npud_ov_genai_perf_metrics_get_num_input_tokens(api, m, &in)),
		check(api, "ov_genai_perf_metrics_get_num_generation_tokens", "", C.npud_ov_genai_perf_metrics_get_num_generation_tokens(api, m, &out)),
		check(api, "ov_genai_perf_metrics_get_ttft", "", C.npud_ov_genai_perf_metrics_get_ttft(api, m, &ttft, &ttftStd)),
		check(api, "ov_genai_perf_metrics_get_generate_duration", "", C.npud_ov_genai_perf_metrics_get_generate_duration(api, m, &gen, &genStd)),
	)
	if err != nil {
		return npu.Result{}, err
	}
	res := npu.Result{
		FinishReason:     npu.FinishStop,
		PromptTokens:     int(in),
		CompletionTokens: int(out),
		Timings:          timings(float64(ttft), float64(gen), elapsed),
	}
	if maxNew > 0 && int(out) >= maxNew {
		res.FinishReason = npu.FinishLength
	}
	return res, nil
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// timings turns GenAI's ttft and generate duration (ms) into phases.
// GenAI answers -1 for a metric without samples (ttft when nothing was
// generated): no phase is ever negative.
func timings(ttftMS, generateMS float64, elapsed time.Duration) npu.Timings {
	total := msDuration(generateMS)
	if total <= 0 {
		total = elapsed
	}
	prefill := min(max(msDuration(ttftMS), 0), total)
	return npu.Timings{Prefill: prefill, Decode: max(total-prefill, 0)}
}

// topK is GenAI's top_k for a request's: 0 switches top-k off, which GenAI
// spells as the largest size_t (its default), not 0.
func topK(k int) C.size_t {
	if k <= 0 {
		return C.size_t(math.MaxUint64)
	}
	return C.size_t(k)
}
