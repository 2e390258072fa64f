/*
 * npud's view of the OpenVINO GenAI C API, loaded at run time.
 *
 * The default build carries the OpenVINO engine but links no OpenVINO
 * library: npud_ov_open loads OpenVINO's core C library and GenAI's C
 * library (dlopen on Linux, LoadLibrary on Windows) and resolves every
 * function below into a table. Each entry is typed from the header's own
 * declaration (__typeof__), so compiling against the official headers
 * checks every signature and the headers stay the only source of types.
 * The npud_ov_* wrappers call through the table; Go cannot call a C
 * function pointer itself.
 */
#ifndef NPUD_OVAPI_H
#define NPUD_OVAPI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "openvino/c/ov_compiled_model.h"
#include "openvino/c/ov_core.h"
#include "openvino/c/ov_infer_request.h"
#include "openvino/c/ov_model.h"
#include "openvino/c/ov_tensor.h"
#include "openvino/genai/c/chat_history.h"
#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"
#include "openvino/genai/c/vlm_pipeline.h"
#include "openvino/genai/c/whisper_pipeline.h"

/* Every function npud calls, with the library that exports it. */
#define NPUD_OV_FUNCTIONS(X) \
    X(CORE, ov_get_openvino_version) \
    X(CORE, ov_version_free) \
    X(CORE, ov_get_error_info) \
    X(CORE, ov_free) \
    X(CORE, ov_core_create) \
    X(CORE, ov_core_free) \
    X(CORE, ov_core_get_available_devices) \
    X(CORE, ov_available_devices_free) \
    X(CORE, ov_core_get_property) \
    X(CORE, ov_core_add_extension) \
    X(GENAI, ov_genai_llm_pipeline_create) \
    X(GENAI, ov_genai_llm_pipeline_free) \
    X(GENAI, ov_genai_llm_pipeline_generate) \
    X(GENAI, ov_genai_llm_pipeline_generate_with_history) \
    X(GENAI, ov_genai_llm_pipeline_get_generation_config) \
    X(GENAI, ov_genai_generation_config_free) \
    X(GENAI, ov_genai_generation_config_validate) \
    X(GENAI, ov_genai_generation_config_set_max_new_tokens) \
    X(GENAI, ov_genai_generation_config_get_max_new_tokens) \
    X(GENAI, ov_genai_generation_config_set_do_sample) \
    X(GENAI, ov_genai_generation_config_set_temperature) \
    X(GENAI, ov_genai_generation_config_set_top_p) \
    X(GENAI, ov_genai_generation_config_set_top_k) \
    X(GENAI, ov_genai_generation_config_set_min_p) \
    X(GENAI, ov_genai_generation_config_set_repetition_penalty) \
    X(GENAI, ov_genai_generation_config_set_presence_penalty) \
    X(GENAI, ov_genai_generation_config_set_frequency_penalty) \
    X(GENAI, ov_genai_generation_config_set_rng_seed) \
    X(GENAI, ov_genai_generation_config_set_stop_strings) \
    X(GENAI, ov_genai_decoded_results_free) \
    X(GENAI, ov_genai_decoded_results_get_string) \
    X(GENAI, ov_genai_decoded_results_get_perf_metrics) \
    X(GENAI, ov_genai_decoded_results_perf_metrics_free) \
    X(GENAI, ov_genai_perf_metrics_get_num_input_tokens) \
    X(GENAI, ov_genai_perf_metrics_get_num_generation_tokens) \
    X(GENAI, ov_genai_perf_metrics_get_ttft) \
    X(GENAI, ov_genai_perf_metrics_get_generate_duration) \
    X(GENAI, ov_genai_chat_history_create) \
    X(GENAI, ov_genai_chat_history_free) \
    X(GENAI, ov_genai_chat_history_push_back) \
    X(GENAI, ov_genai_chat_history_set_extra_context) \
    X(GENAI, ov_genai_chat_history_set_tools) \
    X(GENAI, ov_genai_json_container_create_from_json_string) \
    X(GENAI, ov_genai_json_container_free)

/* What vision models need (GenAI's VLM pipeline and OpenVINO's tensors).
 * They are resolved when present: ov_genai_vlm_pipeline_generate_with_history
 * came with GenAI 2026.3, and a 2026.2 library serves text models without
 * them. */
#define NPUD_OV_VISION_FUNCTIONS(X) \
    X(CORE, ov_shape_create) \
    X(CORE, ov_shape_free) \
    X(CORE, ov_tensor_create_from_host_ptr) \
    X(CORE, ov_tensor_free) \
    X(GENAI, ov_genai_vlm_pipeline_create) \
    X(GENAI, ov_genai_vlm_pipeline_free) \
    X(GENAI, ov_genai_vlm_pipeline_generate) \
    X(GENAI, ov_genai_vlm_pipeline_generate_with_history) \
    X(GENAI, ov_genai_vlm_pipeline_get_generation_config) \
    X(GENAI, ov_genai_vlm_decoded_results_free) \
    X(GENAI, ov_genai_vlm_decoded_results_get_perf_metrics) \
    X(GENAI, ov_genai_vlm_decoded_results_perf_metrics_free) \
    X(GENAI, ov_genai_vlm_decoded_results_get_string)

/* What speech models need (GenAI's Whisper pipeline, since GenAI 2025.3).
 * They are resolved when present, like the vision functions, so that a
 * library without them (a GenAI built without Whisper) still serves text
 * models and refuses speech models naming the function it lacks. */
#define NPUD_OV_SPEECH_FUNCTIONS(X) \
    X(GENAI, ov_genai_whisper_pipeline_create) \
    X(GENAI, ov_genai_whisper_pipeline_free) \
    X(GENAI, ov_genai_whisper_pipeline_generate) \
    X(GENAI, ov_genai_whisper_pipeline_get_generation_config) \
    X(GENAI, ov_genai_whisper_generation_config_free) \
    X(GENAI, ov_genai_whisper_generation_config_get_is_multilingual) \
    X(GENAI, ov_genai_whisper_generation_config_set_language) \
    X(GENAI, ov_genai_whisper_generation_config_set_task) \
    X(GENAI, ov_genai_whisper_generation_config_set_return_timestamps) \
    X(GENAI, ov_genai_whisper_generation_config_set_initial_prompt) \
    X(GENAI, ov_genai_whisper_generation_config_validate) \
    X(GENAI, ov_genai_whisper_decoded_results_free) \
    X(GENAI, ov_genai_whisper_decoded_results_get_texts_count) \
    X(GENAI, ov_genai_whisper_decoded_results_get_text_at) \
    X(GENAI, ov_genai_whisper_decoded_results_has_chunks) \
    X(GENAI, ov_genai_whisper_decoded_results_get_chunks_count) \
    X(GENAI, ov_genai_whisper_decoded_results_get_chunk_at) \
    X(GENAI, ov_genai_whisper_decoded_result_chunk_free) \
    X(GENAI, ov_genai_whisper_decoded_result_chunk_get_start_ts) \
    X(GENAI, ov_genai_whisper_decoded_result_chunk_get_end_ts) \
    X(GENAI, ov_genai_whisper_decoded_result_chunk_get_text)

/* What counting text with a model's own tokenizer needs (OpenVINO's core C
 * API: the folder's openvino_tokenizer.xml read, compiled on the CPU and run
 * on a string tensor; npu/openvino/tokenizer.go). Resolved when present,
 * like the vision functions: a core without them still serves every model,
 * and only the tokenizer is refused, naming the function it lacks. Called
 * directly through the table (api->name(...)) by tokenizer.go's C helpers,
 * so the compiler checks each call against the header's own declaration. */
#define NPUD_OV_TOKENIZER_FUNCTIONS(X) \
    X(CORE, ov_core_read_model) \
    X(CORE, ov_core_compile_model) \
    X(CORE, ov_model_free) \
    X(CORE, ov_compiled_model_create_infer_request) \
    X(CORE, ov_compiled_model_free) \
    X(CORE, ov_infer_request_set_input_tensor_by_index) \
    X(CORE, ov_infer_request_get_tensor) \
    X(CORE, ov_infer_request_start_async) \
    X(CORE, ov_infer_request_wait_for) \
    X(CORE, ov_infer_request_wait) \
    X(CORE, ov_infer_request_cancel) \
    X(CORE, ov_infer_request_free) \
    X(CORE, ov_tensor_create_from_string_array) \
    X(CORE, ov_tensor_get_shape) \
    X(CORE, ov_tensor_get_element_type) \
    X(CORE, ov_tensor_data) \
    X(CORE, ov_tensor_free) \
    X(CORE, ov_shape_create) \
    X(CORE, ov_shape_free)

/* What running an embedding model needs beyond the tokenizer's table
 * (npu/openvino/embed.go): its inputs set by name, tensors of its own
 * memory, and its inputs reshaped to the static [batch, length] the NPU
 * compiles (ov_model_reshape with a static partial shape; every OpenVINO
 * since 2022.1 has them). Resolved when present, like the tokenizer's: a
 * core without them serves every other model and refuses embeddings,
 * naming what it lacks. */
#define NPUD_OV_EMBED_FUNCTIONS(X) \
    X(CORE, ov_infer_request_set_tensor) \
    X(CORE, ov_tensor_create) \
    X(CORE, ov_model_reshape) \
    X(CORE, ov_model_is_dynamic) \
    X(CORE, ov_partial_shape_create_static) \
    X(CORE, ov_partial_shape_free)

typedef struct npud_ov_api {
#define NPUD_OV_ENTRY(lib, name) __typeof__(name)* name;
    NPUD_OV_FUNCTIONS(NPUD_OV_ENTRY)
    NPUD_OV_VISION_FUNCTIONS(NPUD_OV_ENTRY)
    NPUD_OV_SPEECH_FUNCTIONS(NPUD_OV_ENTRY)
#undef NPUD_OV_ENTRY
    /* The tokenizer's table of its own: ov_tensor_free, ov_shape_create and
     * ov_shape_free are the vision table's too, and each table is resolved
     * on its own. */
    struct {
#define NPUD_OV_ENTRY(lib, name) __typeof__(name)* name;
        NPUD_OV_TOKENIZER_FUNCTIONS(NPUD_OV_ENTRY)
#undef NPUD_OV_ENTRY
    } tok;
    struct {
#define NPUD_OV_ENTRY(lib, name) __typeof__(name)* name;
        NPUD_OV_EMBED_FUNCTIONS(NPUD_OV_ENTRY)
#undef NPUD_OV_ENTRY
    } emb;
    const char* vision_missing; /* the first vision function the library lacks; NULL: it has them all */
    const char* speech_missing; /* the first speech function the library lacks; NULL: it has them all */
    const char* tokenizer_missing; /* the first tokenizer function the core lacks; NULL: it has them all */
    const char* embed_missing; /* the first embedding function the core lacks; NULL: it has them all */
    void* core;  /* the libraries' handles: never closed (see loader.c) */
    void* genai;
} npud_ov_api;

/*
 * npud_ov_open loads the core C library at core_path (NULL: only what
 * genai_path brings in) and the GenAI C library at genai_path, and
 * resolves every function. It returns NULL on failure, with the reason in
 * err: the library that did not load and the loader's message, or the
 * first function a library lacks (a release older than npud needs).
 */
npud_ov_api* npud_ov_open(const char* core_path, const char* genai_path, char* err, size_t err_len);

/*
 * npud_ov_open_core loads OpenVINO's core C library alone and resolves only
 * its functions (npud doctor reports the runtime's version and devices
 * where GenAI's C library is missing). Its GenAI entries stay NULL.
 */
npud_ov_api* npud_ov_open_core(const char* core_path, char* err, size_t err_len);

/* npud_lib_keep loads a library by path and keeps it for the life of the
   process, so that a later library needing it by its soname finds it
   already loaded (the dependency chain, see library.go). */
int npud_lib_keep(const char* path, char* err, size_t err_len);

/* npud_lib_probe reports whether the system loader finds a library by its
   name alone (its search path: LD_LIBRARY_PATH, ld.so.cache; PATH). */
int npud_lib_probe(const char* name);

/* npud_ov_symbol finds another symbol in either library, or NULL. */
void* npud_ov_symbol(const npud_ov_api* api, const char* name);

/*
 * OpenVINO's CPU plugin replaces the calling thread's alternate signal stack
 * with a small one of its own when it is constructed (CPUSpecialSetup in
 * Plugin::Plugin, src/plugins/intel_cpu/src/plugin.cpp; SigAltStackSetup,
 * utils/sigstack_manager.cpp): every new core constructs its own plugin on
 * the thread that first uses the CPU, and the plugin's destructor unmaps
 * that stack on whichever thread frees the core. On a Go thread this takes
 * away the signal stack the Go runtime gave it: Go's signal handler then runs
 * on the plugin's smaller stack, or, once the core is freed from another
 * thread, on unmapped memory that the Go heap may have reused, and the
 * process dies later in the Go runtime (seen: SIGSEGV in
 * runtime.futexwakeup from a corrupt M, once a tokenizer had run).
 * npud_sigstack_save before a call that may construct or destroy a CPU
 * plugin, npud_sigstack_restore after it on the same thread (one cgo call),
 * puts the thread's own stack back; the plugin's then stays unused until
 * its destructor unmaps it, which leaves a stack not in use alone.
 */
#ifndef _WIN32
#include <signal.h>
typedef stack_t npud_sigstack;
static inline void npud_sigstack_save(npud_sigstack* s) {
    if (sigaltstack(NULL, s) != 0) s->ss_flags = -1;
}
static inline void npud_sigstack_restore(const npud_sigstack* s) {
    stack_t now;
    if (s->ss_flags == -1 || sigaltstack(NULL, &now) != 0) return;
    if (now.ss_sp == s->ss_sp && now.ss_size == s->ss_size && (now.ss_flags & SS_DISABLE) == (s->ss_flags & SS_DISABLE)) return;
    stack_t back = *s;
    back.ss_flags &= SS_DISABLE; /* SS_ONSTACK is reported, never set */
    sigaltstack(&back, NULL);
}
#else
typedef int npud_sigstack; /* Windows has no alternate signal stacks */
static inline void npud_sigstack_save(npud_sigstack* s) { (void)s; }
static inline void npud_sigstack_restore(const npud_sigstack* s) { (void)s; }
#endif

/* npud_call_int64 calls a function taking nothing and returning an integer
   (the test library's inspection hooks). */
static inline int64_t npud_call_int64(void* fn) {
    return ((int64_t(*)(void))fn)();
}

static inline ov_status_e npud_ov_get_openvino_version(const npud_ov_api* api, ov_version_t* version) {
    return api->ov_get_openvino_version(version);
}
static inline void npud_ov_version_free(const npud_ov_api* api, ov_version_t* version) {
    api->ov_version_free(version);
}
static inline const char* npud_ov_get_error_info(const npud_ov_api* api, ov_status_e status) {
    return api->ov_get_error_info(status);
}
static inline void npud_ov_free(const npud_ov_api* api, const char* content) {
    api->ov_free(content);
}
static inline ov_status_e npud_ov_core_create(const npud_ov_api* api, ov_core_t** core) {
    return api->ov_core_create(core);
}
/* The three core calls that construct or destroy a core's plugins keep the
 * thread's signal stack (npud_sigstack_save above). */
static inline void npud_ov_core_free(const npud_ov_api* api, ov_core_t* core) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    api->ov_core_free(core);
    npud_sigstack_restore(&own);
}
static inline ov_status_e npud_ov_core_get_available_devices(const npud_ov_api* api, const ov_core_t* core, ov_available_devices_t* devices) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    ov_status_e st = api->ov_core_get_available_devices(core, devices);
    npud_sigstack_restore(&own);
    return st;
}
static inline void npud_ov_available_devices_free(const npud_ov_api* api, ov_available_devices_t* devices) {
    api->ov_available_devices_free(devices);
}
static inline ov_status_e npud_ov_core_add_extension(const npud_ov_api* api, const ov_core_t* core, const char* path) {
    return api->ov_core_add_extension(core, path);
}
static inline ov_status_e npud_ov_core_get_property(const npud_ov_api* api, const ov_core_t* core, const char* device_name, const char* property_key, char** property_value) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    ov_status_e st = api->ov_core_get_property(core, device_name, property_key, property_value);
    npud_sigstack_restore(&own);
    return st;
}
/* A model on OpenVINO's core, as the tokenizer (tokenizer.go) and the
 * embedding and rerank models (embed.go) run one: its own core, the
 * compiled IR and its one infer request. */
typedef struct {
    ov_core_t* core;
    ov_compiled_model_t* compiled;
    ov_infer_request_t* request;
} npud_core_model;

/* npud_core_last_err copies the message of the core's last exception on
 * this thread (ov_get_last_err_msg, absent from some builds) into msg. */
static inline void npud_core_last_err(const npud_ov_api* api, char* msg, size_t len) {
    msg[0] = 0;
    void* fn = npud_ov_symbol(api, "ov_get_last_err_msg");
    if (!fn) return;
    const char* m = ((const char* (*)(void))fn)();
    if (m) {
        strncpy(msg, m, len - 1);
        msg[len - 1] = 0;
    }
}

/* npud_core_model_close frees the model. Freeing the core destroys its CPU
 * plugin, which unmaps the signal stack it set on another thread
 * (npud_sigstack_save above). */
static inline void npud_core_model_close(const npud_ov_api* api, npud_core_model* m) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    if (m->request) api->tok.ov_infer_request_free(m->request);
    if (m->compiled) api->tok.ov_compiled_model_free(m->compiled);
    if (m->core) api->ov_core_free(m->core);
    m->request = NULL;
    m->compiled = NULL;
    m->core = NULL;
    npud_sigstack_restore(&own);
}

/* npud_core_model_open runs every step of opening a model on one thread, so
 * that a failure's message (per thread) is the step's: a core, the
 * extension library when one is named (openvino-tokenizers for a
 * tokenizer), the IR at xml compiled for device with its shapes as
 * exported, one infer request. step names the call that failed;
 * everything made before it is freed. Compiling constructs the core's CPU
 * plugin on this thread, which takes its signal stack: given back at once. */
static inline ov_status_e npud_core_model_open(const npud_ov_api* api, const char* extension, const char* xml,
                                               const char* device, npud_core_model* m, const char** step, char* msg,
                                               size_t len) {
    ov_status_e st;
    ov_model_t* model = NULL;
    *step = "ov_core_create";
    if ((st = api->ov_core_create(&m->core)) != OK) goto fail;
    if (extension) {
        *step = "ov_core_add_extension";
        if ((st = api->ov_core_add_extension(m->core, extension)) != OK) goto fail;
    }
    *step = "ov_core_read_model";
    if ((st = api->tok.ov_core_read_model(m->core, xml, NULL, &model)) != OK) goto fail;
    *step = "ov_core_compile_model";
    npud_sigstack own;
    npud_sigstack_save(&own);
    st = api->tok.ov_core_compile_model(m->core, model, device, 0, &m->compiled);
    npud_sigstack_restore(&own);
    api->tok.ov_model_free(model);
    if (st != OK) goto fail;
    *step = "ov_compiled_model_create_infer_request";
    if ((st = api->tok.ov_compiled_model_create_infer_request(m->compiled, &m->request)) != OK) goto fail;
    return OK;
fail:
    npud_core_last_err(api, msg, len); /* before ov_core_free, which clears it */
    npud_core_model_close(api, m);
    return st;
}

/* Freeing a pipeline frees its core and plugins: the thread's signal stack
 * is kept (npud_sigstack_save above). */
static inline void npud_ov_genai_llm_pipeline_free(const npud_ov_api* api, ov_genai_llm_pipeline* pipe) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    api->ov_genai_llm_pipeline_free(pipe);
    npud_sigstack_restore(&own);
}
static inline ov_status_e npud_ov_genai_llm_pipeline_generate(const npud_ov_api* api, ov_genai_llm_pipeline* pipe, const char* inputs, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results) {
    return api->ov_genai_llm_pipeline_generate(pipe, inputs, config, streamer, results);
}
static inline ov_status_e npud_ov_genai_llm_pipeline_generate_with_history(const npud_ov_api* api, ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results) {
    return api->ov_genai_llm_pipeline_generate_with_history(pipe, history, config, streamer, results);
}
static inline ov_status_e npud_ov_genai_llm_pipeline_get_generation_config(const npud_ov_api* api, const ov_genai_llm_pipeline* pipe, ov_genai_generation_config** config) {
    return api->ov_genai_llm_pipeline_get_generation_config(pipe, config);
}
static inline void npud_ov_genai_generation_config_free(const npud_ov_api* api, ov_genai_generation_config* handle) {
    api->ov_genai_generation_config_free(handle);
}
static inline ov_status_e npud_ov_genai_generation_config_validate(const npud_ov_api* api, ov_genai_generation_config* config) {
    return api->ov_genai_generation_config_validate(config);
}
static inline ov_status_e npud_ov_genai_generation_config_set_max_new_tokens(const npud_ov_api* api, ov_genai_generation_config* handle, const size_t value) {
    return api->ov_genai_generation_config_set_max_new_tokens(handle, value);
}
static inline ov_status_e npud_ov_genai_generation_config_get_max_new_tokens(const npud_ov_api* api, const ov_genai_generation_config* config, size_t* max_new_tokens) {
    return api->ov_genai_generation_config_get_max_new_tokens(config, max_new_tokens);
}
static inline ov_status_e npud_ov_genai_generation_config_set_do_sample(const npud_ov_api* api, ov_genai_generation_config* config, const bool value) {
    return api->ov_genai_generation_config_set_do_sample(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_temperature(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_temperature(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_top_p(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_top_p(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_top_k(const npud_ov_api* api, ov_genai_generation_config* config, const size_t value) {
    return api->ov_genai_generation_config_set_top_k(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_min_p(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_min_p(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_repetition_penalty(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_repetition_penalty(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_presence_penalty(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_presence_penalty(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_frequency_penalty(const npud_ov_api* api, ov_genai_generation_config* config, const float value) {
    return api->ov_genai_generation_config_set_frequency_penalty(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_rng_seed(const npud_ov_api* api, ov_genai_generation_config* config, const size_t value) {
    return api->ov_genai_generation_config_set_rng_seed(config, value);
}
static inline ov_status_e npud_ov_genai_generation_config_set_stop_strings(const npud_ov_api* api, ov_genai_generation_config* config, const char** strings, const size_t count) {
    return api->ov_genai_generation_config_set_stop_strings(config, strings, count);
}
static inline void npud_ov_genai_decoded_results_free(const npud_ov_api* api, ov_genai_decoded_results* results) {
    api->ov_genai_decoded_results_free(results);
}
static inline ov_status_e npud_ov_genai_decoded_results_get_string(const npud_ov_api* api, const ov_genai_decoded_results* results, char* output, size_t* output_size) {
    return api->ov_genai_decoded_results_get_string(results, output, output_size);
}
static inline ov_status_e npud_ov_genai_decoded_results_get_perf_metrics(const npud_ov_api* api, const ov_genai_decoded_results* results, ov_genai_perf_metrics** metrics) {
    return api->ov_genai_decoded_results_get_perf_metrics(results, metrics);
}
static inline void npud_ov_genai_decoded_results_perf_metrics_free(const npud_ov_api* api, ov_genai_perf_metrics* metrics) {
    api->ov_genai_decoded_results_perf_metrics_free(metrics);
}
static inline ov_status_e npud_ov_genai_perf_metrics_get_num_input_tokens(const npud_ov_api* api, const ov_genai_perf_metrics* metrics, size_t* num_input_tokens) {
    return api->ov_genai_perf_metrics_get_num_input_tokens(metrics, num_input_tokens);
}
static inline ov_status_e npud_ov_genai_perf_metrics_get_num_generation_tokens(const npud_ov_api* api, const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens) {
    return api->ov_genai_perf_metrics_get_num_generation_tokens(metrics, num_generation_tokens);
}
static inline ov_status_e npud_ov_genai_perf_metrics_get_ttft(const npud_ov_api* api, const ov_genai_perf_metrics* metrics, float* mean, float* std) {
    return api->ov_genai_perf_metrics_get_ttft(metrics, mean, std);
}
static inline ov_status_e npud_ov_genai_perf_metrics_get_generate_duration(const npud_ov_api* api, const ov_genai_perf_metrics* metrics, float* mean, float* std) {
    return api->ov_genai_perf_metrics_get_generate_duration(metrics, mean, std);
}
static inline ov_genai_chat_history_status_e npud_ov_genai_chat_history_create(const npud_ov_api* api, ov_genai_chat_history** history) {
    return api->ov_genai_chat_history_create(history);
}
static inline void npud_ov_genai_chat_history_free(const npud_ov_api* api, ov_genai_chat_history* history) {
    api->ov_genai_chat_history_free(history);
}
static inline ov_genai_chat_history_status_e npud_ov_genai_chat_history_push_back(const npud_ov_api* api, ov_genai_chat_history* history, const ov_genai_json_container* message) {
    return api->ov_genai_chat_history_push_back(history, message);
}
static inline ov_genai_chat_history_status_e npud_ov_genai_chat_history_set_extra_context(const npud_ov_api* api, ov_genai_chat_history* history, const ov_genai_json_container* extra_context) {
    return api->ov_genai_chat_history_set_extra_context(history, extra_context);
}
static inline ov_genai_chat_history_status_e npud_ov_genai_chat_history_set_tools(const npud_ov_api* api, ov_genai_chat_history* history, const ov_genai_json_container* tools) {
    return api->ov_genai_chat_history_set_tools(history, tools);
}
static inline ov_status_e npud_ov_shape_create(const npud_ov_api* api, const int64_t rank, const int64_t* dims, ov_shape_t* shape) {
    return api->ov_shape_create(rank, dims, shape);
}
static inline ov_status_e npud_ov_shape_free(const npud_ov_api* api, ov_shape_t* shape) {
    return api->ov_shape_free(shape);
}
static inline ov_status_e npud_ov_tensor_create_from_host_ptr(const npud_ov_api* api, const ov_element_type_e type, const ov_shape_t shape, void* host_ptr, ov_tensor_t** tensor) {
    return api->ov_tensor_create_from_host_ptr(type, shape, host_ptr, tensor);
}
static inline void npud_ov_tensor_free(const npud_ov_api* api, ov_tensor_t* tensor) {
    api->ov_tensor_free(tensor);
}
static inline void npud_ov_genai_vlm_pipeline_free(const npud_ov_api* api, ov_genai_vlm_pipeline* pipe) {
    npud_sigstack own;
    npud_sigstack_save(&own);
    api->ov_genai_vlm_pipeline_free(pipe);
    npud_sigstack_restore(&own);
}
static inline void npud_ov_genai_vlm_decoded_results_free(const npud_ov_api* api, ov_genai_vlm_decoded_results* results) {
    api->ov_genai_vlm_decoded_results_free(results);
}
static inline ov_status_e npud_ov_genai_vlm_decoded_results_get_perf_metrics(const npud_ov_api* api, const ov_genai_vlm_decoded_results* results, ov_genai_perf_metrics** metrics) {
    return api->ov_genai_vlm_decoded_results_get_perf_metrics(results, metrics);
}
static inline void npud_ov_genai_vlm_decoded_results_perf_metrics_free(const npud_ov_api* api, ov_genai_perf_metrics* metrics) {
    api->ov_genai_vlm_decoded_results_perf_metrics_free(metrics);
}
static inline ov_status_e npud_ov_genai_vlm_decoded_results_get_string(const npud_ov_api* api, const ov_genai_vlm_decoded_results* results, char* output, size_t* output_size) {
    return api->ov_genai_vlm_decoded_results_get_string(results, output, output_size);
}
static inline ov_genai_json_container_status_e npud_ov_genai_json_container_create_from_json_string(const npud_ov_api* api, ov_genai_json_container** container, const char* json_str) {
    return api->ov_genai_json_container_create_from_json_string(container, json_str);
}
static inline void npud_ov_genai_json_container_free(const npud_ov_api* api, ov_genai_json_container* container) {
    api->ov_genai_json_container_free(container);
}

/*
 * The wrappers above spell each function's parameters; these assertions
 * make the compiler prove the spelling is the header's own type, so a
 * header whose declaration differs fails the build instead of converting
 * arguments silently. (ov_genai_llm_pipeline_create is variadic and called
 * through its typed pointer in binding.go.)
 */
typedef ov_status_e npud_sig_ov_get_openvino_version(ov_version_t* version);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_get_openvino_version), npud_sig_ov_get_openvino_version), "ov_get_openvino_version: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_version_free(ov_version_t* version);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_version_free), npud_sig_ov_version_free), "ov_version_free: npud calls it with another signature than the header declares");
typedef const char* npud_sig_ov_get_error_info(ov_status_e status);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_get_error_info), npud_sig_ov_get_error_info), "ov_get_error_info: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_free(const char* content);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_free), npud_sig_ov_free), "ov_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_core_create(ov_core_t** core);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_core_create), npud_sig_ov_core_create), "ov_core_create: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_core_free(ov_core_t* core);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_core_free), npud_sig_ov_core_free), "ov_core_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_core_get_available_devices), npud_sig_ov_core_get_available_devices), "ov_core_get_available_devices: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_available_devices_free(ov_available_devices_t* devices);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_available_devices_free), npud_sig_ov_available_devices_free), "ov_available_devices_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_core_add_extension(const ov_core_t* core, const char* path);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_core_add_extension), npud_sig_ov_core_add_extension), "ov_core_add_extension: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key, char** property_value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_core_get_property), npud_sig_ov_core_get_property), "ov_core_get_property: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_llm_pipeline_free), npud_sig_ov_genai_llm_pipeline_free), "ov_genai_llm_pipeline_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_llm_pipeline_generate), npud_sig_ov_genai_llm_pipeline_generate), "ov_genai_llm_pipeline_generate: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_llm_pipeline_generate_with_history), npud_sig_ov_genai_llm_pipeline_generate_with_history), "ov_genai_llm_pipeline_generate_with_history: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe, ov_genai_generation_config** config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_llm_pipeline_get_generation_config), npud_sig_ov_genai_llm_pipeline_get_generation_config), "ov_genai_llm_pipeline_get_generation_config: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_generation_config_free(ov_genai_generation_config* handle);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_free), npud_sig_ov_genai_generation_config_free), "ov_genai_generation_config_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_validate(ov_genai_generation_config* config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_validate), npud_sig_ov_genai_generation_config_validate), "ov_genai_generation_config_validate: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_max_new_tokens(ov_genai_generation_config* handle, const size_t value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_max_new_tokens), npud_sig_ov_genai_generation_config_set_max_new_tokens), "ov_genai_generation_config_set_max_new_tokens: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* max_new_tokens);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_get_max_new_tokens), npud_sig_ov_genai_generation_config_get_max_new_tokens), "ov_genai_generation_config_get_max_new_tokens: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_do_sample(ov_genai_generation_config* config, const bool value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_do_sample), npud_sig_ov_genai_generation_config_set_do_sample), "ov_genai_generation_config_set_do_sample: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_temperature(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_temperature), npud_sig_ov_genai_generation_config_set_temperature), "ov_genai_generation_config_set_temperature: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_top_p(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_top_p), npud_sig_ov_genai_generation_config_set_top_p), "ov_genai_generation_config_set_top_p: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_top_k(ov_genai_generation_config* config, const size_t value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_top_k), npud_sig_ov_genai_generation_config_set_top_k), "ov_genai_generation_config_set_top_k: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_min_p(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_min_p), npud_sig_ov_genai_generation_config_set_min_p), "ov_genai_generation_config_set_min_p: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_repetition_penalty(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_repetition_penalty), npud_sig_ov_genai_generation_config_set_repetition_penalty), "ov_genai_generation_config_set_repetition_penalty: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_presence_penalty(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_presence_penalty), npud_sig_ov_genai_generation_config_set_presence_penalty), "ov_genai_generation_config_set_presence_penalty: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_frequency_penalty(ov_genai_generation_config* config, const float value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_frequency_penalty), npud_sig_ov_genai_generation_config_set_frequency_penalty), "ov_genai_generation_config_set_frequency_penalty: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_rng_seed(ov_genai_generation_config* config, const size_t value);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_rng_seed), npud_sig_ov_genai_generation_config_set_rng_seed), "ov_genai_generation_config_set_rng_seed: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings, const size_t count);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_generation_config_set_stop_strings), npud_sig_ov_genai_generation_config_set_stop_strings), "ov_genai_generation_config_set_stop_strings: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_decoded_results_free(ov_genai_decoded_results* results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_decoded_results_free), npud_sig_ov_genai_decoded_results_free), "ov_genai_decoded_results_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results, char* output, size_t* output_size);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_decoded_results_get_string), npud_sig_ov_genai_decoded_results_get_string), "ov_genai_decoded_results_get_string: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results, ov_genai_perf_metrics** metrics);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_decoded_results_get_perf_metrics), npud_sig_ov_genai_decoded_results_get_perf_metrics), "ov_genai_decoded_results_get_perf_metrics: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_decoded_results_perf_metrics_free), npud_sig_ov_genai_decoded_results_perf_metrics_free), "ov_genai_decoded_results_perf_metrics_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num_input_tokens);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_perf_metrics_get_num_input_tokens), npud_sig_ov_genai_perf_metrics_get_num_input_tokens), "ov_genai_perf_metrics_get_num_input_tokens: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_perf_metrics_get_num_generation_tokens), npud_sig_ov_genai_perf_metrics_get_num_generation_tokens), "ov_genai_perf_metrics_get_num_generation_tokens: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_perf_metrics_get_ttft(const ov_genai_perf_metrics* metrics, float* mean, float* std);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_perf_metrics_get_ttft), npud_sig_ov_genai_perf_metrics_get_ttft), "ov_genai_perf_metrics_get_ttft: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_perf_metrics_get_generate_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_perf_metrics_get_generate_duration), npud_sig_ov_genai_perf_metrics_get_generate_duration), "ov_genai_perf_metrics_get_generate_duration: npud calls it with another signature than the header declares");
typedef ov_genai_chat_history_status_e npud_sig_ov_genai_chat_history_create(ov_genai_chat_history** history);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_chat_history_create), npud_sig_ov_genai_chat_history_create), "ov_genai_chat_history_create: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_chat_history_free(ov_genai_chat_history* history);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_chat_history_free), npud_sig_ov_genai_chat_history_free), "ov_genai_chat_history_free: npud calls it with another signature than the header declares");
typedef ov_genai_chat_history_status_e npud_sig_ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history, const ov_genai_json_container* extra_context);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_chat_history_set_extra_context), npud_sig_ov_genai_chat_history_set_extra_context), "ov_genai_chat_history_set_extra_context: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_shape_create), npud_sig_ov_shape_create), "ov_shape_create: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_shape_free(ov_shape_t* shape);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_shape_free), npud_sig_ov_shape_free), "ov_shape_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_tensor_create_from_host_ptr(const ov_element_type_e type, const ov_shape_t shape, void* host_ptr, ov_tensor_t** tensor);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_tensor_create_from_host_ptr), npud_sig_ov_tensor_create_from_host_ptr), "ov_tensor_create_from_host_ptr: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_tensor_free(ov_tensor_t* tensor);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_tensor_free), npud_sig_ov_tensor_free), "ov_tensor_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_vlm_pipeline** pipe, ...);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_pipeline_create), npud_sig_ov_genai_vlm_pipeline_create), "ov_genai_vlm_pipeline_create: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_pipeline_free), npud_sig_ov_genai_vlm_pipeline_free), "ov_genai_vlm_pipeline_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_pipeline_generate), npud_sig_ov_genai_vlm_pipeline_generate), "ov_genai_vlm_pipeline_generate: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe, const ov_genai_chat_history* history, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_pipeline_generate_with_history), npud_sig_ov_genai_vlm_pipeline_generate_with_history), "ov_genai_vlm_pipeline_generate_with_history: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe, ov_genai_generation_config** config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_pipeline_get_generation_config), npud_sig_ov_genai_vlm_pipeline_get_generation_config), "ov_genai_vlm_pipeline_get_generation_config: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_decoded_results_free), npud_sig_ov_genai_vlm_decoded_results_free), "ov_genai_vlm_decoded_results_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results, ov_genai_perf_metrics** metrics);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_decoded_results_get_perf_metrics), npud_sig_ov_genai_vlm_decoded_results_get_perf_metrics), "ov_genai_vlm_decoded_results_get_perf_metrics: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_decoded_results_perf_metrics_free), npud_sig_ov_genai_vlm_decoded_results_perf_metrics_free), "ov_genai_vlm_decoded_results_perf_metrics_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output, size_t* output_size);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_vlm_decoded_results_get_string), npud_sig_ov_genai_vlm_decoded_results_get_string), "ov_genai_vlm_decoded_results_get_string: npud calls it with another signature than the header declares");
typedef ov_genai_chat_history_status_e npud_sig_ov_genai_chat_history_set_tools(ov_genai_chat_history* history, const ov_genai_json_container* tools);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_chat_history_set_tools), npud_sig_ov_genai_chat_history_set_tools), "ov_genai_chat_history_set_tools: npud calls it with another signature than the header declares");
typedef ov_genai_chat_history_status_e npud_sig_ov_genai_chat_history_push_back(ov_genai_chat_history* history, const ov_genai_json_container* message);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_chat_history_push_back), npud_sig_ov_genai_chat_history_push_back), "ov_genai_chat_history_push_back: npud calls it with another signature than the header declares");
typedef ov_genai_json_container_status_e npud_sig_ov_genai_json_container_create_from_json_string(ov_genai_json_container** container, const char* json_str);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_json_container_create_from_json_string), npud_sig_ov_genai_json_container_create_from_json_string), "ov_genai_json_container_create_from_json_string: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_json_container_free(ov_genai_json_container* container);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_json_container_free), npud_sig_ov_genai_json_container_free), "ov_genai_json_container_free: npud calls it with another signature than the header declares");

/* The speech functions' types, proven the same way. */
typedef ov_status_e npud_sig_ov_genai_whisper_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_whisper_pipeline** pipeline, ...);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_pipeline_create), npud_sig_ov_genai_whisper_pipeline_create), "ov_genai_whisper_pipeline_create: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_pipeline_free), npud_sig_ov_genai_whisper_pipeline_free), "ov_genai_whisper_pipeline_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size, const ov_genai_whisper_generation_config* config, ov_genai_whisper_decoded_results** results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_pipeline_generate), npud_sig_ov_genai_whisper_pipeline_generate), "ov_genai_whisper_pipeline_generate: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config** config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_pipeline_get_generation_config), npud_sig_ov_genai_whisper_pipeline_get_generation_config), "ov_genai_whisper_pipeline_get_generation_config: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_whisper_generation_config_free(ov_genai_whisper_generation_config* config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_free), npud_sig_ov_genai_whisper_generation_config_free), "ov_genai_whisper_generation_config_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_get_is_multilingual(const ov_genai_whisper_generation_config* config, bool* is_multilingual);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_get_is_multilingual), npud_sig_ov_genai_whisper_generation_config_get_is_multilingual), "ov_genai_whisper_generation_config_get_is_multilingual: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_set_language(ov_genai_whisper_generation_config* config, const char* language);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_set_language), npud_sig_ov_genai_whisper_generation_config_set_language), "ov_genai_whisper_generation_config_set_language: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_set_task(ov_genai_whisper_generation_config* config, const char* task);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_set_task), npud_sig_ov_genai_whisper_generation_config_set_task), "ov_genai_whisper_generation_config_set_task: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_set_return_timestamps(ov_genai_whisper_generation_config* config, bool return_timestamps);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_set_return_timestamps), npud_sig_ov_genai_whisper_generation_config_set_return_timestamps), "ov_genai_whisper_generation_config_set_return_timestamps: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_set_initial_prompt(ov_genai_whisper_generation_config* config, const char* initial_prompt);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_set_initial_prompt), npud_sig_ov_genai_whisper_generation_config_set_initial_prompt), "ov_genai_whisper_generation_config_set_initial_prompt: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_generation_config_validate(ov_genai_whisper_generation_config* config);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_generation_config_validate), npud_sig_ov_genai_whisper_generation_config_validate), "ov_genai_whisper_generation_config_validate: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_free), npud_sig_ov_genai_whisper_decoded_results_free), "ov_genai_whisper_decoded_results_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results, size_t* count);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_get_texts_count), npud_sig_ov_genai_whisper_decoded_results_get_texts_count), "ov_genai_whisper_decoded_results_get_texts_count: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index, char* text, size_t* text_size);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_get_text_at), npud_sig_ov_genai_whisper_decoded_results_get_text_at), "ov_genai_whisper_decoded_results_get_text_at: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results, bool* has_chunks);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_has_chunks), npud_sig_ov_genai_whisper_decoded_results_has_chunks), "ov_genai_whisper_decoded_results_has_chunks: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results, size_t* count);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_get_chunks_count), npud_sig_ov_genai_whisper_decoded_results_get_chunks_count), "ov_genai_whisper_decoded_results_get_chunks_count: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results, size_t index, ov_genai_whisper_decoded_result_chunk** chunk);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_results_get_chunk_at), npud_sig_ov_genai_whisper_decoded_results_get_chunk_at), "ov_genai_whisper_decoded_results_get_chunk_at: npud calls it with another signature than the header declares");
typedef void npud_sig_ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_result_chunk_free), npud_sig_ov_genai_whisper_decoded_result_chunk_free), "ov_genai_whisper_decoded_result_chunk_free: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* start_ts);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_result_chunk_get_start_ts), npud_sig_ov_genai_whisper_decoded_result_chunk_get_start_ts), "ov_genai_whisper_decoded_result_chunk_get_start_ts: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* end_ts);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_result_chunk_get_end_ts), npud_sig_ov_genai_whisper_decoded_result_chunk_get_end_ts), "ov_genai_whisper_decoded_result_chunk_get_end_ts: npud calls it with another signature than the header declares");
typedef ov_status_e npud_sig_ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk, char* text, size_t* text_size);
_Static_assert(__builtin_types_compatible_p(__typeof__(ov_genai_whisper_decoded_result_chunk_get_text), npud_sig_ov_genai_whisper_decoded_result_chunk_get_text), "ov_genai_whisper_decoded_result_chunk_get_text: npud calls it with another signature than the header declares");

#endif
