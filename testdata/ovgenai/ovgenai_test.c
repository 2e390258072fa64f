/*
 * npud's test implementation of the OpenVINO GenAI C API subset npud calls,
 * written from shared/reference/openvino-genai-c-api.md. It runs no model:
 * a deterministic "model" makes up tokens from the prompt and the seed. What
 * it reproduces is the behaviour the binding must cope with:
 *   - the streamer callback runs on a thread of its own for CPU/GPU and on
 *     the caller's thread for NPU;
 *   - after the callback answers STOP or CANCEL it is called once more (the
 *     detokenizer's flush) and its answer is ignored;
 *   - every failure is UNKNOW_EXCEPTION (-17) with no message: a model folder
 *     without openvino_model.xml, a device not in OVTEST_DEVICES, an NPU
 *     prompt longer than MAX_PROMPT_LEN, a prompt containing OVTEST_FAIL;
 *   - perf metrics in milliseconds;
 *   - OVTEST_TOKEN_DELAY_US microseconds between tokens;
 *   - OVTEST_BROKEN_DEVICES: devices on which every model fails to compile;
 *   - OVTEST_COMPILE_DELAY_US: how long creating a pipeline takes, for the
 *     models whose folder holds a file named slow_compile;
 *   - a count of live objects, for leak checks (ovtest.h).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "openvino/genai/c/llm_pipeline.h"
#include "ovtest.h"

/* From the core test library (ovcore_test.c), which this one links. */
const char* ovtest_devices(void);
void ovtest_object_created(void);
void ovtest_object_freed(void);

static atomic_int last_foreign, last_after_stop, last_generated;

int ovtest_last_callbacks_foreign(void) { return atomic_load(&last_foreign); }
int ovtest_last_calls_after_stop(void) { return atomic_load(&last_after_stop); }
int ovtest_last_generated(void) { return atomic_load(&last_generated); }

/* ---- generation config ---- */

struct ov_genai_generation_config_opaque {
    size_t max_new_tokens;
    size_t rng_seed;
    float temperature;
    int do_sample;
    char** stops;
    size_t nstops;
};

ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config) {
    if (!config) return INVALID_C_PARAM;
    *config = calloc(1, sizeof(ov_genai_generation_config));
    (*config)->max_new_tokens = SIZE_MAX;
    (*config)->temperature = 1.0f;
    ovtest_object_created();
    return OK;
}

static void free_stops(ov_genai_generation_config* c) {
    for (size_t i = 0; i < c->nstops; i++) free(c->stops[i]);
    free(c->stops);
    c->stops = NULL;
    c->nstops = 0;
}

void ov_genai_generation_config_free(ov_genai_generation_config* config) {
    if (!config) return;
    free_stops(config);
    free(config);
    ovtest_object_freed();
}

#define SETTER(name, type, body)                                                             \
    ov_status_e ov_genai_generation_config_set_##name(ov_genai_generation_config* config,  \
                                                      const type value) {                  \
        if (!config) return INVALID_C_PARAM;                                                \
        body;                                                                               \
        return OK;                                                                          \
    }

SETTER(max_new_tokens, size_t, config->max_new_tokens = value)
SETTER(do_sample, bool, config->do_sample = value)
SETTER(temperature, float, config->temperature = value)
SETTER(top_p, float, (void)value)
SETTER(top_k, size_t, (void)value)
SETTER(min_p, float, (void)value)
SETTER(repetition_penalty, float, (void)value)
SETTER(presence_penalty, float, (void)value)
SETTER(frequency_penalty, float, (void)value)
SETTER(rng_seed, size_t, config->rng_seed = value)

ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings,
                                                       const size_t count) {
    if (!config || (count && !strings)) return INVALID_C_PARAM;
    free_stops(config);
    config->stops = calloc(count ? count : 1, sizeof(char*));
    for (size_t i = 0; i < count; i++)
        if (strings[i]) config->stops[config->nstops++] = strdup(strings[i]);
    return OK;
}

ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* value) {
    if (!config || !value) return INVALID_C_PARAM;
    *value = config->max_new_tokens;
    return OK;
}

/* ---- JSON container and chat history ---- */

struct ov_genai_json_container_opaque {
    char* json;
};

ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container** container,
                                                                                 const char* json) {
    if (!container || !json) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    while (*json == ' ') json++;
    size_t n = strlen(json);
    if (n < 2 || (json[0] != '{' && json[0] != '[') || (json[n - 1] != '}' && json[n - 1] != ']'))
        return OV_GENAI_JSON_CONTAINER_INVALID_JSON;
    *container = calloc(1, sizeof(ov_genai_json_container));
    (*container)->json = strdup(json);
    ovtest_object_created();
    return OV_GENAI_JSON_CONTAINER_OK;
}

void ov_genai_json_container_free(ov_genai_json_container* container) {
    if (!container) return;
    free(container->json);
    free(container);
    ovtest_object_freed();
}

struct ov_genai_chat_history_opaque {
    char* text; /* the messages' JSON, one per line: what the test model reads */
};

ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history) {
    if (!history) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    *history = calloc(1, sizeof(ov_genai_chat_history));
    (*history)->text = strdup("");
    ovtest_object_created();
    return OV_GENAI_CHAT_HISTORY_OK;
}

void ov_genai_chat_history_free(ov_genai_chat_history* history) {
    if (!history) return;
    free(history->text);
    free(history);
    ovtest_object_freed();
}

ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history,
                                                               const ov_genai_json_container* message) {
    if (!history || !message) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    if (message->json[0] != '{' || !strstr(message->json, "\"role\"")) return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    size_t n = strlen(history->text), m = strlen(message->json);
    history->text = realloc(history->text, n + m + 2);
    memcpy(history->text + n, message->json, m);
    history->text[n + m] = '\n';
    history->text[n + m + 1] = 0;
    return OV_GENAI_CHAT_HISTORY_OK;
}

/* ---- pipeline ---- */

struct ov_genai_llm_pipeline_opaque {
    char device[32];
    size_t max_prompt_len;
    float load_ms;
    atomic_int busy;
};

struct ov_genai_perf_metrics_opaque {
    float load_ms, ttft_ms, tpot_ms, generate_ms;
    size_t input_tokens, generated_tokens;
};

struct ov_genai_decoded_results_opaque {
    struct ov_genai_perf_metrics_opaque metrics;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int device_available(const char* device) {
    char* list = strdup(ovtest_devices());
    int found = 0;
    char* save = NULL;
    for (char* tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, device) == 0) found = 1;
    free(list);
    return found;
}

ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_llm_pipeline** pipe, ...) {
    if (!models_path || !device || !pipe || property_args_size % 2 != 0) return INVALID_C_PARAM;
    double start = now_ms();
    size_t max_prompt_len = 1024;
    va_list ap;
    va_start(ap, pipe);
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* key = va_arg(ap, const char*);
        const char* value = va_arg(ap, const char*);
        if (strcmp(device, "NPU") == 0 && strcmp(key, "MAX_PROMPT_LEN") == 0) {
            char* end = NULL;
            long v = strtol(value, &end, 10);
            if (!end || *end || v <= 0) {
                va_end(ap);
                return UNKNOW_EXCEPTION; /* std::stoi throws */
            }
            max_prompt_len = (size_t)v;
        }
    }
    va_end(ap);
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/openvino_model.xml", models_path);
    struct stat st;
    const char* broken = getenv("OVTEST_BROKEN_DEVICES"); /* devices that fail to compile any model */
    if (stat(xml, &st) != 0 || !device_available(device) || (broken && strstr(broken, device)))
        return UNKNOW_EXCEPTION;
    char slow[4096];
    snprintf(slow, sizeof slow, "%s/slow_compile", models_path);
    const char* compile_delay = getenv("OVTEST_COMPILE_DELAY_US");
    if (compile_delay && stat(slow, &st) == 0)
        usleep((useconds_t)strtoul(compile_delay, NULL, 10)); /* an NPU compile takes minutes */
    *pipe = calloc(1, sizeof(ov_genai_llm_pipeline));
    snprintf((*pipe)->device, sizeof (*pipe)->device, "%s", device);
    (*pipe)->max_prompt_len = max_prompt_len;
    (*pipe)->load_ms = (float)(now_ms() - start);
    ovtest_object_created();
    return OK;
}

void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe) {
    if (!pipe) return;
    free(pipe);
    ovtest_object_freed();
}

ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe,
                                                        ov_genai_generation_config** config) {
    if (!pipe || !config) return INVALID_C_PARAM;
    ov_status_e st = ov_genai_generation_config_create(config);
    if (st == OK) (*config)->max_new_tokens = 64; /* the "model's" generation_config.json */
    return st;
}

/* The test model's vocabulary: ASCII and multi-byte words. */
static const char* const vocab[] = {"the", "npu", "answers", "quickly", "and", "quietly", "café", "日本", "🙂",
                                    "tokens", "flow", "through", "a", "bridge", "to", "clients"};
#define VOCAB_SIZE (sizeof vocab / sizeof vocab[0])

static uint64_t fnv1a(const char* s, uint64_t h) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static size_t count_tokens(const char* text) {
    size_t n = 0;
    int in_word = 0;
    for (; *text; text++) {
        int space = *text == ' ' || *text == '\n' || *text == '\t';
        if (!space && !in_word) n++;
        in_word = !space;
    }
    return n;
}

/* ovtest_token writes the i-th token of the answer to input into buf. */
static void ovtest_token(uint64_t seed, size_t i, char* buf, size_t size) {
    uint64_t h = (seed + i * 0x9e3779b97f4a7c15ULL) * 6364136223846793005ULL;
    snprintf(buf, size, "%s%s", i == 0 ? "" : " ", vocab[(h >> 33) % VOCAB_SIZE]);
}

struct run {
    ov_genai_llm_pipeline* pipe;
    const ov_genai_generation_config* config;
    const streamer_callback* streamer;
    uint64_t seed;
    size_t length;
    long delay_us;
    pthread_t caller;
    /* out */
    int foreign, after_stop;
    size_t generated;
    double first_token_ms;
};

static void* run_tokens(void* arg) {
    struct run* r = arg;
    char tok[64];
    int stopped = 0;
    for (size_t i = 0; i < r->length; i++) {
        if (i > 0 && r->delay_us > 0) usleep((useconds_t)r->delay_us);
        ovtest_token(r->seed, i, tok, sizeof tok);
        r->generated++;
        if (r->first_token_ms == 0) r->first_token_ms = now_ms();
        if (!r->streamer) continue;
        if (!pthread_equal(pthread_self(), r->caller)) r->foreign = 1;
        ov_genai_streaming_status_e st = r->streamer->callback_func(tok, r->streamer->args);
        if (st != OV_GENAI_STREAMING_STATUS_RUNNING) {
            stopped = 1;
            /* The detokenizer's flush: once more, answer ignored. */
            if (i + 1 < r->length) {
                ovtest_token(r->seed, i + 1, tok, sizeof tok);
                r->generated++;
                r->streamer->callback_func(tok, r->streamer->args);
                r->after_stop++;
            }
            break;
        }
    }
    (void)stopped;
    return NULL;
}

static ov_status_e generate_text(ov_genai_llm_pipeline* pipe, const char* input,
                                 const ov_genai_generation_config* config, const streamer_callback* streamer,
                                 ov_genai_decoded_results** results) {
    if (!pipe || !input || (!streamer && !results) || (streamer && !streamer->callback_func)) return INVALID_C_PARAM;
    if (atomic_exchange(&pipe->busy, 1)) {
        fprintf(stderr, "ovtest: concurrent generate on one pipeline\n");
        abort(); /* the real pipeline corrupts its state; make it loud */
    }
    ov_status_e status = OK;
    double start = now_ms();
    size_t input_tokens = count_tokens(input);
    ov_genai_generation_config* defaults = NULL;
    if (!config) {
        ov_genai_llm_pipeline_get_generation_config(pipe, &defaults);
        config = defaults;
    }
    if (strstr(input, "OVTEST_FAIL") || (strcmp(pipe->device, "NPU") == 0 && input_tokens > pipe->max_prompt_len) ||
        config->max_new_tokens == 0) {
        status = UNKNOW_EXCEPTION;
        goto out;
    }
    const char* delay = getenv("OVTEST_TOKEN_DELAY_US");
    uint64_t seed = fnv1a(input, 1469598103934665603ULL) ^ (uint64_t)config->rng_seed;
    size_t natural = 16 + (size_t)(seed % 17);
    struct run r = {
        .pipe = pipe,
        .config = config,
        .streamer = streamer,
        .seed = seed,
        .length = natural < config->max_new_tokens ? natural : config->max_new_tokens,
        .delay_us = delay ? atol(delay) : 0,
        .caller = pthread_self(),
    };
    if (strcmp(pipe->device, "NPU") == 0) {
        run_tokens(&r); /* the stateful pipeline calls back on the caller's thread */
    } else {
        pthread_t worker; /* the continuous-batching pipeline's streamer thread */
        if (pthread_create(&worker, NULL, run_tokens, &r) != 0) {
            status = UNKNOW_EXCEPTION;
            goto out;
        }
        pthread_join(worker, NULL);
    }
    atomic_store(&last_foreign, r.foreign);
    atomic_store(&last_after_stop, r.after_stop);
    atomic_store(&last_generated, (int)r.generated);
    if (results) {
        *results = calloc(1, sizeof(ov_genai_decoded_results));
        struct ov_genai_perf_metrics_opaque* m = &(*results)->metrics;
        double end = now_ms();
        m->load_ms = pipe->load_ms;
        m->input_tokens = input_tokens;
        m->generated_tokens = r.generated;
        m->ttft_ms = r.first_token_ms ? (float)(r.first_token_ms - start) : 0;
        m->tpot_ms = r.generated > 1 ? (float)((end - r.first_token_ms) / (double)(r.generated - 1)) : 0;
        m->generate_ms = (float)(end - start);
        ovtest_object_created();
    }
out:
    ov_genai_generation_config_free(defaults);
    atomic_store(&pipe->busy, 0);
    return status;
}

ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs,
                                           const ov_genai_generation_config* config, const streamer_callback* streamer,
                                           ov_genai_decoded_results** results) {
    return generate_text(pipe, inputs, config, streamer, results);
}

ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe,
                                                        const ov_genai_chat_history* history,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_decoded_results** results) {
    if (!history || !history->text[0]) return UNKNOW_EXCEPTION; /* the library asserts a non-empty history */
    return generate_text(pipe, history->text, config, streamer, results);
}

void ov_genai_decoded_results_free(ov_genai_decoded_results* results) {
    if (!results) return;
    free(results);
    ovtest_object_freed();
}

ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results,
                                                      ov_genai_perf_metrics** metrics) {
    if (!results || !metrics) return INVALID_C_PARAM;
    *metrics = malloc(sizeof(ov_genai_perf_metrics));
    **metrics = results->metrics;
    ovtest_object_created();
    return OK;
}

void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) {
    if (!metrics) return;
    free(metrics);
    ovtest_object_freed();
}

/* ---- perf metrics ---- */

ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* m, float* load_time) {
    if (!m || !load_time) return INVALID_C_PARAM;
    *load_time = m->load_ms;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* m, size_t* num) {
    if (!m || !num) return INVALID_C_PARAM;
    *num = m->generated_tokens;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* m, size_t* num) {
    if (!m || !num) return INVALID_C_PARAM;
    *num = m->input_tokens;
    return OK;
}

#define MEAN_STD(name, field)                                                                     \
    ov_status_e ov_genai_perf_metrics_get_##name(const ov_genai_perf_metrics* m, float* mean, float* std) { \
        if (!m || !mean || !std) return INVALID_C_PARAM;                                          \
        *mean = m->field;                                                                         \
        *std = 0;                                                                                 \
        return OK;                                                                                \
    }

MEAN_STD(ttft, ttft_ms)
MEAN_STD(tpot, tpot_ms)
MEAN_STD(generate_duration, generate_ms)
