/*
 * The test library's Whisper pipeline (openvino/genai/c/whisper_pipeline.h,
 * whisper_generation_config.h), written from GenAI 2026.3's sources:
 * src/c/src/whisper_pipeline.cpp, whisper_generation_config.cpp and
 * src/cpp/src/whisper/ (pipeline.cpp, whisper.cpp, generation_config.cpp,
 * feature_extractor.cpp, timestamps.cpp, context_tokens.cpp). It recognises
 * no speech: the "model" says what it hears in each 30-second window, in the
 * simulated engine's words ("1.50 seconds, level 0.354, pitch 440 Hz."), so
 * that a wrong sample rate (the pitch and the length move), channel mixing or
 * scaling (the level moves) show in tests. What it reproduces:
 *   - raw speech is 16 kHz mono float with no rate argument: the feature
 *     extractor assumes its preprocessor_config.json's sampling_rate
 *     (16000); NULL is INVALID_C_PARAM, 200 samples or fewer throw
 *     ("raw_speech too short for reflect padding", n_fft / 2);
 *   - long audio in GenAI's own windows of 30 s (nb_max_frames 3000 of
 *     hop 160), one after the other;
 *   - the config from the model's generation_config.json (is_multilingual,
 *     lang_to_id), validated on every generate: for a multilingual model a
 *     language must be a key of lang_to_id ("<|en|>": GenAI 2026.3 takes no
 *     plain "en") and a task "transcribe" or "translate"; an English-only
 *     model takes neither; a multilingual model without lang_to_id fails
 *     every generate;
 *   - text as the tokenizer decodes it (a leading space); chunks only when
 *     return_timestamps was asked for, one per window here, start and end in
 *     steps of 0.02 s from the window's offset; with OVTEST_WHISPER_UNCLOSED
 *     set, the last chunk lacks its closing timestamp and comes back with an
 *     end of -1 (timestamps.cpp: the decoder stopped before closing it);
 *   - the first window starts with what the decoder was told: "Translated: "
 *     for translate, "<lang>: " for a language set (its token's code);
 *   - properties: the NPU path only for the device named exactly "NPU"
 *     (pipeline.cpp: any other name compiles the dynamic encoder as it is,
 *     which the NPU cannot), MAX_PROMPT_LEN/MIN_RESPONSE_LEN as strings
 *     throw (the C wrapper converts none, pop_int_and_cast wants integers),
 *     and an unknown key fails the compile;
 *   - a model folder holding crash_on_transcribe segfaults in generate.
 * OVTEST_WITHOUT_WHISPER builds a library without any of it.
 */
#ifndef OVTEST_WITHOUT_WHISPER

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openvino/genai/c/whisper_pipeline.h"
#include "ovtest.h"

/* From the other halves of the test library. */
const char* ovtest_devices(void);
void ovtest_object_created(void);
void ovtest_object_freed(void);

#define SAMPLE_RATE 16000
#define WINDOW_SAMPLES (30 * SAMPLE_RATE) /* chunk_length 30 s, n_samples 480000 */
#define MIN_SAMPLES 200                   /* n_fft / 2 */
#define MAX_LANGS 128

static atomic_int whisper_generates;
static atomic_int last_prompt_bytes = -1;
int ovtest_whisper_generates(void) { return atomic_load(&whisper_generates); }
int64_t ovtest_last_whisper_prompt_bytes(void) { return atomic_load(&last_prompt_bytes); }

struct ov_genai_whisper_generation_config_opaque {
    int is_multilingual;
    char* langs[MAX_LANGS]; /* lang_to_id's keys */
    size_t nlangs;
    char* language; /* NULL: detect */
    char* task;     /* NULL: transcribe */
    char* initial_prompt;
    int return_timestamps;
};

struct ov_genai_whisper_pipeline_opaque {
    ov_genai_whisper_generation_config config; /* from generation_config.json */
    int crash;
};

struct ov_genai_whisper_decoded_result_chunk_opaque {
    float start, end;
    char* text;
};

struct ov_genai_whisper_decoded_results_opaque {
    char* text;
    int has_chunks;
    struct ov_genai_whisper_decoded_result_chunk_opaque* chunks;
    size_t nchunks;
};

static char* dup_or_null(const char* s) { return s ? strdup(s) : NULL; }

static void config_clear(ov_genai_whisper_generation_config* c) {
    for (size_t i = 0; i < c->nlangs; i++) free(c->langs[i]);
    free(c->language);
    free(c->task);
    free(c->initial_prompt);
    memset(c, 0, sizeof *c);
}

static void config_copy(ov_genai_whisper_generation_config* to, const ov_genai_whisper_generation_config* from) {
    *to = *from;
    for (size_t i = 0; i < from->nlangs; i++) to->langs[i] = strdup(from->langs[i]);
    to->language = dup_or_null(from->language);
    to->task = dup_or_null(from->task);
    to->initial_prompt = dup_or_null(from->initial_prompt);
}

/* read_generation_config reads what GenAI reads of generation_config.json:
 * is_multilingual (default true) and lang_to_id's keys. No file: the
 * defaults (multilingual, no languages). */
static void read_generation_config(const char* dir, ov_genai_whisper_generation_config* c) {
    memset(c, 0, sizeof *c);
    c->is_multilingual = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE* f = fopen(path, "rb");
    if (!f) return;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char* m = strstr(buf, "\"is_multilingual\"");
    if (m && (m = strchr(m, ':'))) {
        while (*++m == ' ') {
        }
        c->is_multilingual = strncmp(m, "true", 4) == 0;
    }
    const char* l = strstr(buf, "\"lang_to_id\"");
    const char* end = l ? strchr(l, '}') : NULL;
    for (const char* k = l ? strstr(l, "\"<|") : NULL; k && k < end && c->nlangs < MAX_LANGS; k = strstr(k, "\"<|")) {
        const char* close = strchr(k + 1, '"');
        if (!close) break;
        size_t len = (size_t)(close - k - 1);
        char* key = malloc(len + 1);
        memcpy(key, k + 1, len);
        key[len] = 0;
        c->langs[c->nlangs++] = key;
        k = close + 1;
    }
}

/* config_valid is WhisperGenerationConfig::validate (generation_config.cpp,
 * 2026.3): the language an exact key of lang_to_id. */
static int config_valid(const ov_genai_whisper_generation_config* c) {
    if (c->is_multilingual && c->nlangs == 0) return 0;
    if (c->is_multilingual && c->language) {
        int found = 0;
        for (size_t i = 0; i < c->nlangs; i++) found |= strcmp(c->langs[i], c->language) == 0;
        if (!found) return 0;
    }
    if (c->is_multilingual && c->task && strcmp(c->task, "transcribe") != 0 && strcmp(c->task, "translate") != 0)
        return 0;
    if (!c->is_multilingual && (c->language || c->task)) return 0;
    return 1;
}

/* ---- generation config ---- */

ov_status_e ov_genai_whisper_generation_config_create(ov_genai_whisper_generation_config** config) {
    if (!config) return INVALID_C_PARAM;
    *config = calloc(1, sizeof(ov_genai_whisper_generation_config));
    (*config)->is_multilingual = 1;
    ovtest_object_created();
    return OK;
}

void ov_genai_whisper_generation_config_free(ov_genai_whisper_generation_config* config) {
    if (!config) return;
    config_clear(config);
    memset(config, 0xdd, sizeof *config);
    free(config);
    ovtest_object_freed();
}

ov_status_e ov_genai_whisper_generation_config_get_is_multilingual(const ov_genai_whisper_generation_config* config,
                                                                   bool* is_multilingual) {
    if (!config || !is_multilingual) return INVALID_C_PARAM;
    *is_multilingual = config->is_multilingual;
    return OK;
}

ov_status_e ov_genai_whisper_generation_config_set_is_multilingual(ov_genai_whisper_generation_config* config,
                                                                   bool is_multilingual) {
    if (!config) return INVALID_C_PARAM;
    config->is_multilingual = is_multilingual;
    return OK;
}

/* The setters take NULL as "unset" (std::nullopt). */
#define STRING_SETTER(name, field)                                                                     \
    ov_status_e ov_genai_whisper_generation_config_set_##name(ov_genai_whisper_generation_config* config, \
                                                             const char* value) {                     \
        if (!config) return INVALID_C_PARAM;                                                           \
        free(config->field);                                                                           \
        config->field = dup_or_null(value);                                                            \
        return OK;                                                                                     \
    }

STRING_SETTER(language, language)
STRING_SETTER(task, task)
STRING_SETTER(initial_prompt, initial_prompt)

ov_status_e ov_genai_whisper_generation_config_set_return_timestamps(ov_genai_whisper_generation_config* config,
                                                                     bool return_timestamps) {
    if (!config) return INVALID_C_PARAM;
    config->return_timestamps = return_timestamps;
    return OK;
}

ov_status_e ov_genai_whisper_generation_config_validate(ov_genai_whisper_generation_config* config) {
    if (!config) return INVALID_C_PARAM;
    return config_valid(config) ? OK : UNKNOW_EXCEPTION;
}

/* ---- pipeline ---- */

static int whisper_device_available(const char* device) {
    char* list = strdup(ovtest_devices());
    int found = 0;
    char* save = NULL;
    size_t n = strlen(device);
    for (char* tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, device) == 0 || (strncmp(tok, device, n) == 0 && tok[n] == '.')) found = 1;
    free(list);
    return found;
}

static int file_in(const char* dir, const char* name) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

ov_status_e ov_genai_whisper_pipeline_create(const char* models_path, const char* device,
                                             const size_t property_args_size, ov_genai_whisper_pipeline** pipeline,
                                             ...) {
    if (!models_path || !device || !pipeline || property_args_size % 2 != 0) return INVALID_C_PARAM;
    static const char* const known[] = {"CACHE_DIR", "PERFORMANCE_HINT", "INFERENCE_PRECISION_HINT", "NUM_STREAMS"};
    int on_npu = strncmp(device, "NPU", 3) == 0;
    va_list ap;
    va_start(ap, pipeline);
    int ok = 1;
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* key = va_arg(ap, const char*);
        const char* value = va_arg(ap, const char*);
        int k = 0;
        for (size_t j = 0; key && value && j < sizeof known / sizeof *known; j++) k |= strcmp(key, known[j]) == 0;
        /* MAX_PROMPT_LEN/MIN_RESPONSE_LEN reach pop_int_and_cast as strings
         * on the NPU (it throws), and the plugins refuse them elsewhere. */
        if (!k) ok = 0;
    }
    va_end(ap);
    const char* broken = getenv("OVTEST_BROKEN_DEVICES");
    if (!ovtest_tokenizers_load()) return UNKNOW_EXCEPTION;
    if (!ok || !whisper_device_available(device) || (broken && strstr(broken, device))) return UNKNOW_EXCEPTION;
    /* GenAI's NPU path (a static encoder, NPUW's Whisper decoder) is taken
     * only for "NPU"; "NPU.0" compiles the dynamic encoder as it is. */
    if (on_npu && strcmp(device, "NPU") != 0) return UNKNOW_EXCEPTION;
    if (!file_in(models_path, "openvino_encoder_model.xml") || !file_in(models_path, "openvino_decoder_model.xml"))
        return UNKNOW_EXCEPTION;
    *pipeline = calloc(1, sizeof(ov_genai_whisper_pipeline));
    read_generation_config(models_path, &(*pipeline)->config);
    (*pipeline)->crash = file_in(models_path, "crash_on_transcribe");
    ovtest_object_created();
    return OK;
}

void ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline) {
    if (!pipeline) return;
    config_clear(&pipeline->config);
    memset(pipeline, 0xdd, sizeof *pipeline);
    free(pipeline);
    ovtest_object_freed();
}

ov_status_e ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline,
                                                            ov_genai_whisper_generation_config** config) {
    if (!pipeline || !config) return INVALID_C_PARAM;
    *config = calloc(1, sizeof(ov_genai_whisper_generation_config));
    config_copy(*config, &pipeline->config);
    ovtest_object_created();
    return OK;
}

/* hear says what one window holds, as the simulated engine does (npu/sim):
 * its length, its RMS level and, from the upward zero crossings, its pitch. */
static void hear(const float* x, size_t n, char* out, size_t size) {
    double sum = 0;
    long crossings = 0, first = -1, last = -1;
    for (size_t i = 0; i < n; i++) {
        sum += (double)x[i] * x[i];
        if (i > 0 && x[i - 1] < 0 && x[i] >= 0) {
            crossings++;
            if (first < 0) first = (long)i;
            last = (long)i;
        }
    }
    double rms = n ? sqrt(sum / (double)n) : 0;
    char level[32] = "silence", pitch[32] = "";
    if (rms > 1e-4) snprintf(level, sizeof level, "level %.3f", rms);
    if (crossings > 1 && rms > 1e-4)
        snprintf(pitch, sizeof pitch, ", pitch %.0f Hz", (double)(crossings - 1) * SAMPLE_RATE / (double)(last - first));
    snprintf(out, size, "%.2f seconds, %s%s.", (double)n / SAMPLE_RATE, level, pitch);
}

/* ts is a timestamp token's time: steps of 0.02 s (time_precision). */
static float ts(double seconds) { return (float)(round(seconds / 0.02) * 0.02); }

ov_status_e ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech,
                                               size_t raw_speech_size,
                                               const ov_genai_whisper_generation_config* config,
                                               ov_genai_whisper_decoded_results** results) {
    if (!pipeline || !raw_speech || !results) return INVALID_C_PARAM;
    atomic_fetch_add(&whisper_generates, 1);
    /* prepare_per_generate_config: the given config (lang_to_id from the
     * pipeline's when it has none), validated; else the pipeline's. */
    ov_genai_whisper_generation_config c;
    config_copy(&c, config ? config : &pipeline->config);
    if (config && c.nlangs == 0) {
        for (size_t i = 0; i < pipeline->config.nlangs; i++) c.langs[i] = strdup(pipeline->config.langs[i]);
        c.nlangs = pipeline->config.nlangs;
    }
    ov_status_e st = OK;
    if (!config_valid(&c) || raw_speech_size <= MIN_SAMPLES) {
        st = UNKNOW_EXCEPTION;
        goto out;
    }
    atomic_store(&last_prompt_bytes, c.initial_prompt ? (int)strlen(c.initial_prompt) : -1);
    if (pipeline->crash) {
        raise(SIGSEGV);
        abort();
    }
    size_t windows = (raw_speech_size + WINDOW_SAMPLES - 1) / WINDOW_SAMPLES;
    ov_genai_whisper_decoded_results* r = calloc(1, sizeof *r);
    r->has_chunks = c.return_timestamps; /* long-form forces timestamps, but returns chunks only when asked */
    r->chunks = calloc(windows, sizeof *r->chunks);
    r->text = calloc(windows, 160); /* each window's text is under 160 bytes */
    int unclosed = getenv("OVTEST_WHISPER_UNCLOSED") != NULL;
    for (size_t w = 0; w < windows; w++) {
        size_t start = w * WINDOW_SAMPLES;
        size_t n = raw_speech_size - start < WINDOW_SAMPLES ? raw_speech_size - start : WINDOW_SAMPLES;
        char prefix[32] = "", words[96], seg[160];
        if (w == 0 && c.task && strcmp(c.task, "translate") == 0) snprintf(prefix, sizeof prefix, "Translated: ");
        else if (w == 0 && c.language) {
            /* "<|de|>" -> "de" (to_unescaped_language) */
            size_t len = strlen(c.language);
            snprintf(prefix, sizeof prefix, "%.*s: ", (int)(len > 4 ? len - 4 : 0), c.language + 2);
        }
        hear(raw_speech + start, n, words, sizeof words);
        snprintf(seg, sizeof seg, " %s%s", prefix, words); /* decoded BPE text starts with a space */
        strcat(r->text, seg);
        struct ov_genai_whisper_decoded_result_chunk_opaque* ch = &r->chunks[r->nchunks++];
        ch->start = ts((double)start / SAMPLE_RATE);
        ch->end = unclosed && w == windows - 1 ? -1.0f : ts((double)(start + n) / SAMPLE_RATE);
        ch->text = strdup(seg);
    }
    *results = r;
    ovtest_object_created();
out:
    config_clear(&c);
    return st;
}

/* ---- results ---- */

void ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results) {
    if (!results) return;
    for (size_t i = 0; i < results->nchunks; i++) free(results->chunks[i].text);
    free(results->chunks);
    free(results->text);
    memset(results, 0xdd, sizeof *results);
    free(results);
    ovtest_object_freed();
}

static ov_status_e copy_text(const char* s, char* out, size_t* size) {
    size_t need = strlen(s) + 1;
    if (out) {
        if (*size < need) return OUT_OF_BOUNDS;
        memcpy(out, s, need);
    }
    *size = need;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results,
                                                             size_t* count) {
    if (!results || !count) return INVALID_C_PARAM;
    *count = 1;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index,
                                                         char* text, size_t* text_size) {
    if (!results || !text_size) return INVALID_C_PARAM;
    if (index >= 1) return OUT_OF_BOUNDS;
    return copy_text(results->text, text, text_size);
}

ov_status_e ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results,
                                                        bool* has_chunks) {
    if (!results || !has_chunks) return INVALID_C_PARAM;
    *has_chunks = results->has_chunks;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results,
                                                              size_t* count) {
    if (!results || !count) return INVALID_C_PARAM;
    *count = results->has_chunks ? results->nchunks : 0;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results,
                                                          size_t index, ov_genai_whisper_decoded_result_chunk** chunk) {
    if (!results || !chunk) return INVALID_C_PARAM;
    if (!results->has_chunks) return NOT_FOUND;
    if (index >= results->nchunks) return OUT_OF_BOUNDS;
    *chunk = malloc(sizeof **chunk);
    (*chunk)->start = results->chunks[index].start;
    (*chunk)->end = results->chunks[index].end;
    (*chunk)->text = strdup(results->chunks[index].text);
    ovtest_object_created();
    return OK;
}

void ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk) {
    if (!chunk) return;
    free(chunk->text);
    memset(chunk, 0xdd, sizeof *chunk);
    free(chunk);
    ovtest_object_freed();
}

ov_status_e ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                               float* start_ts) {
    if (!chunk || !start_ts) return INVALID_C_PARAM;
    *start_ts = chunk->start;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                             float* end_ts) {
    if (!chunk || !end_ts) return INVALID_C_PARAM;
    *end_ts = chunk->end;
    return OK;
}

ov_status_e ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk,
                                                           char* text, size_t* text_size) {
    if (!chunk || !text_size) return INVALID_C_PARAM;
    return copy_text(chunk->text, text, text_size);
}

#endif /* OVTEST_WITHOUT_WHISPER */
