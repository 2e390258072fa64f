/*
 * npud's test implementation of the OpenVINO GenAI C API subset npud calls,
 * written from the official 2026.3 headers and GenAI's sources. It runs no model:
 * a deterministic "model" makes up tokens from the prompt and the seed (its
 * words; with a model folder's byte-level BPE tokenizer.json, the same
 * answer in that tokenizer's tokens, and prompts counted with it:
 * ovbpe_test.c). What it reproduces is the behaviour the binding must cope
 * with:
 *   - GenAI's TextStreamer: the last tokens are held back (the first
 *     callback comes with the third token), a newline flushes, a token that
 *     leaves a code point incomplete is held back (the model spells an emoji
 *     as two byte-fallback tokens), empty text is never sent, and a final
 *     flush, whose answer is ignored, ends every generation;
 *   - the stateful (NPU) pipeline calls back on the caller's thread and stops
 *     at the token whose callback answered STOP or CANCEL; the continuous-
 *     batching (CPU/GPU) pipeline calls back from a streamer thread of its
 *     own, keeps generating until it sees the answer (those tokens are
 *     counted, never streamed), and flushes on the caller's thread;
 *   - every failure is UNKNOW_EXCEPTION (-17) with no message: a model folder
 *     without openvino_model.xml, a device not in OVTEST_DEVICES, an NPU
 *     prompt longer than MAX_PROMPT_LEN, a prompt containing OVTEST_FAIL;
 *   - perf metrics in milliseconds;
 *   - OVTEST_TOKEN_DELAY_US microseconds between tokens;
 *   - the NPU as GenAI and NPUW run it: the whole history prefilled and
 *     counted every turn, chunked or static prefill, prefix caching, and
 *     their costs as a model with OVTEST_NPU_* knobs (the NPU's cost model
 *     below); CPU/GPU's quiet fallback to the stateful pipeline;
 *   - minja's tool polyfill for templates that do not render tools;
 *   - OVTEST_BROKEN_DEVICES: devices on which every model fails to compile;
 *   - OVTEST_COMPILE_DELAY_US: how long creating a pipeline takes, for the
 *     models whose folder holds a file named slow_compile;
 *   - native faults, for the worker processes: a prompt holding OVTEST_CRASH
 *     segfaults after the first callback, OVTEST_ABORT aborts there,
 *     OVTEST_HANG stops calling back for ever there, OVTEST_HANG_PREFILL
 *     never produces a first token; a model folder holding crash_on_load
 *     segfaults while compiling (on the devices the file names, or any), one holding kill_on_load is killed there
 *     (SIGKILL, as the OOM killer does);
 *   - a count of live objects, for leak checks (ovtest.h).
 */
#ifndef _WIN32
#include <dlfcn.h>
#include <limits.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"
#include "openvino/genai/c/vlm_pipeline.h"
#include "ovtest.h"

enum fault { FAULT_NONE, FAULT_CRASH, FAULT_ABORT, FAULT_HANG };

/* hang_forever stands for a native call that never returns (a device lost
 * mid-inference): no callback, no cancel, only killing the process ends it. */
static void hang_forever(void) {
    for (;;) usleep(1000000);
}

/* crash delivers the SIGSEGV a plugin's bad pointer would (a store through
 * NULL is undefined behaviour the compiler may drop; the signal is not). */
static void crash(void) {
    raise(SIGSEGV);
    abort(); /* not reached: SIGSEGV's default action ends the process */
}

static enum fault fault_in(const char* input) {
    if (strstr(input, "OVTEST_CRASH")) return FAULT_CRASH;
    if (strstr(input, "OVTEST_ABORT")) return FAULT_ABORT;
    if (strstr(input, "OVTEST_HANG") && !strstr(input, "OVTEST_HANG_PREFILL")) return FAULT_HANG;
    return FAULT_NONE;
}

/* From the core test library (ovcore_test.c), which this one links. */
const char* ovtest_devices(void);
void ovtest_object_created(void);
void ovtest_object_freed(void);

static atomic_int last_foreign, last_after_stop, last_generated, last_prefilled, last_written;

int ovtest_last_prefilled(void) { return atomic_load(&last_prefilled); }

static atomic_int generate_calls;

int ovtest_generate_calls(void) { return atomic_load(&generate_calls); }

int ovtest_last_callbacks_foreign(void) { return atomic_load(&last_foreign); }
int ovtest_last_calls_after_stop(void) { return atomic_load(&last_after_stop); }
int ovtest_last_generated(void) { return atomic_load(&last_generated); }
int ovtest_last_written(void) { return atomic_load(&last_written); }

/* ---- generation config ---- */

struct ov_genai_generation_config_opaque {
    size_t max_new_tokens;
    size_t max_length; /* prompt and answer; used only when max_new_tokens is not set */
    size_t rng_seed;
    float temperature, top_p, min_p;
    float repetition_penalty, presence_penalty, frequency_penalty;
    size_t top_k;
    int do_sample;
    char** stops;
    size_t nstops;
};

ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config) {
    if (!config) return INVALID_C_PARAM;
    *config = calloc(1, sizeof(ov_genai_generation_config));
    (*config)->max_new_tokens = SIZE_MAX;
    (*config)->max_length = SIZE_MAX;
    /* GenAI's GenerationConfig defaults. */
    (*config)->temperature = 1.0f;
    (*config)->top_p = 1.0f;
    (*config)->repetition_penalty = 1.0f;
    (*config)->top_k = SIZE_MAX;
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
SETTER(max_length, size_t, config->max_length = value)
SETTER(do_sample, bool, config->do_sample = value)
SETTER(temperature, float, config->temperature = value)
SETTER(top_p, float, config->top_p = value)
SETTER(top_k, size_t, config->top_k = value)
SETTER(min_p, float, config->min_p = value)
SETTER(repetition_penalty, float, config->repetition_penalty = value)
SETTER(presence_penalty, float, config->presence_penalty = value)
SETTER(frequency_penalty, float, config->frequency_penalty = value)
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

/* GenerationConfig::validate() (src/cpp/src/generation_config.cpp) for the
 * fields npud sets, greedy and multinomial decoding; the C wrapper turns the
 * failed assertion into UNKNOW_EXCEPTION. */
static int config_valid(const ov_genai_generation_config* c) {
    /* Without EOS, stop strings or a length bound a generation never ends:
     * the test model always has an EOS token, as real models do. */
    if (c->max_new_tokens == 0) return 0;
    if (c->frequency_penalty < -2.0f || c->frequency_penalty > 2.0f) return 0;
    if (c->presence_penalty < -2.0f || c->presence_penalty > 2.0f) return 0;
    if (!(c->repetition_penalty > 0.0f)) return 0;
    if (c->do_sample) {
        if (!(c->top_p > 0.0f && c->top_p <= 1.0f)) return 0;
        if (!(c->temperature > 0.0f)) return 0;
        if (!(c->min_p >= 0.0f && c->min_p < 1.0f)) return 0;
    }
    return 1;
}

ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config* config) {
    if (!config) return INVALID_C_PARAM;
    return config_valid(config) ? OK : UNKNOW_EXCEPTION;
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
    char* text;  /* the messages' JSON, one per line: what the test model reads */
    char* extra; /* the extra context's JSON (enable_thinking), or NULL */
    char* tools; /* the tools' JSON array, or NULL */
    /* A VLM's state for this history object (GenAI attaches it to the
     * ChatHistory: chat_history_state.cpp): what the model saw of the
     * images encoded so far. A new history object starts without. */
    char* seen;
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
    free(history->extra);
    free(history->tools);
    free(history->seen);
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

/* The extra context goes to the chat template (GenAI: the template's
 * variables, such as enable_thinking); here the test model reads it. */
ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history,
                                                                       const ov_genai_json_container* extra_context) {
    if (!history || !extra_context) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    if (extra_context->json[0] != '{') return OV_GENAI_CHAT_HISTORY_INVALID_JSON; /* an object */
    free(history->extra);
    history->extra = strdup(extra_context->json);
    return OV_GENAI_CHAT_HISTORY_OK;
}

/* The tools go to the chat template as its `tools` variable; GenAI
 * takes only an array (src/c/src/chat_history.cpp). A template that does
 * not render them gets them through minja's polyfill (polyfill_tools). */
ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history* history,
                                                               const ov_genai_json_container* tools) {
    if (!history || !tools) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    if (tools->json[0] != '[') return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    free(history->tools);
    history->tools = strdup(tools->json);
    return OV_GENAI_CHAT_HISTORY_OK;
}

static uint64_t fnv1a(const char* s, uint64_t h);

/* ---- the NPU's cost model ----
 *
 * GenAI's stateful pipeline on the NPU templates and prefills the whole
 * chat history on every turn and resets the KV cache each time
 * (src/cpp/src/llm/pipeline_stateful.cpp: m_use_full_chat_history for NPU,
 * reset_state before each generate), so num_input_tokens counts the whole
 * history. What NPUW does with that prefill decides its cost
 * (openvino src/plugins/intel_npu/src/plugin/npuw/llm_compiled_model.cpp):
 *   - MAX_PROMPT_LEN and MIN_RESPONSE_LEN are aligned up to 64;
 *   - prefill is chunked when PREFILL_HINT is DYNAMIC (the default) and
 *     NPUW_LLM_PREFILL_CHUNK_SIZE (default 1024, a power of two) is below
 *     the aligned prompt length, which is then aligned to the chunk; else
 *     it is one static prefill shaped for the whole MAX_PROMPT_LEN;
 *   - a model with both token_type_ids and inputs_embeds (Gemma) cannot
 *     chunk: NPUW throws when asked to;
 *   - prefix caching (NPUW_LLM_ENABLE_PREFIX_CACHING, off by default) only
 *     with chunking: blocks of NPUW_LLM_PREFIX_CACHING_BLOCK_SIZE (256)
 *     tokens keyed by the hash of every token up to their last, at most
 *     NPUW_LLM_PREFIX_CACHING_MAX_NUM_BLOCKS (128), least recently used
 *     leaf evicted first (npuw/llm_prefix_caching.cpp): a prefill restores
 *     the leading blocks it finds, never all of the prompt, at most the
 *     prompt length less one chunk, aligned down to a whole chunk, and
 *     stores the blocks of every full chunk it computed. The cache belongs
 *     to the compiled model: every conversation on the pipeline shares it.
 *
 * The costs are a model, calibrated to OpenVINO Model Server's published
 * Qwen3-8B int4 figures on a Panther Lake NPU (docs/OPENVINO.md), each a
 * knob (environment):
 *   OVTEST_NPU_PREFILL_US_PER_TOKEN  per token of every chunk (or of the
 *                                    static prefill), 1172 (1.2 s a chunk)
 *   OVTEST_NPU_ATTENTION_NS          per token of a chunk and token before
 *                                    it, 267 (0.28 s a chunk per 1k before)
 *   OVTEST_NPU_PREFILL_FIXED_MS      per generate (template, tokenizer), 100
 *   OVTEST_NPU_DECODE_MS             per generated token, 77
 *   OVTEST_NPU_COMPILE_MS            a first compile, 120000
 *   OVTEST_NPU_CACHED_COMPILE_PERCENT  of that with CACHE_DIR holding the
 *                                    model's blob, 10
 *   OVTEST_NPU_TIME_SCALE            the share of each modelled cost the
 *                                    library really sleeps: 0 (the
 *                                    default) keeps time virtual, so tests
 *                                    stay fast; 1 is real time.
 * The modelled costs of the last call are read with the ovtest.h hooks. */

#define NPU_ALIGN 64

struct prefix_block {
    uint64_t hash; /* the hash of every token up to the block's last */
    uint64_t prev; /* the block before it (0: the first) */
    uint64_t used; /* the LRU clock at its last use */
};

struct npu_model {
    size_t max_prompt;      /* the prefill's shape: MAX_PROMPT_LEN aligned */
    size_t chunk;           /* prefill chunk; 0: one static prefill */
    int prefix_caching;
    size_t block, max_blocks;
    struct prefix_block* blocks;
    size_t nblocks;
    uint64_t clock;
    pthread_mutex_t mu;     /* the blocks (one generate at a time anyway) */
};

static atomic_llong last_prefill_us, last_compile_us;
static atomic_int last_restored, last_chunks, last_compile_cached;

int64_t ovtest_last_prefill_us(void) { return atomic_load(&last_prefill_us); }
int ovtest_last_restored(void) { return atomic_load(&last_restored); }
int ovtest_last_chunks(void) { return atomic_load(&last_chunks); }
int64_t ovtest_last_compile_us(void) { return atomic_load(&last_compile_us); }
int ovtest_last_compile_cached(void) { return atomic_load(&last_compile_cached); }

static double knob(const char* name, double def) {
    const char* v = getenv(name);
    if (!v || !*v) return def;
    char* end = NULL;
    double d = strtod(v, &end);
    return end && !*end && d >= 0 ? d : def;
}

/* spend sleeps the scaled share of a modelled cost. */
static void spend(double modelled_us) {
    double us = modelled_us * knob("OVTEST_NPU_TIME_SCALE", 0);
    if (us >= 1) usleep((useconds_t)us);
}

static size_t align_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* token_hashes: each token's hash, chained with every token before it:
 * the ids of the folder's tokenizer, or the test model's words. */
static uint64_t* token_hashes(const ovtest_vocab* vocab, const char* text, size_t n) {
    uint64_t* out = calloc(n ? n : 1, sizeof *out);
    uint64_t h = 1469598103934665603ULL;
    if (vocab) {
        int64_t* ids = malloc((n ? n : 1) * sizeof *ids);
        size_t got = ovtest_tokenize(vocab, text, ids, n);
        for (size_t i = 0; i < got && i < n; i++) out[i] = h = (h ^ (uint64_t)ids[i]) * 1099511628211ULL;
        free(ids);
        return out;
    }
    size_t i = 0;
    int in_word = 0;
    for (; *text && i < n; text++) {
        int space = *text == ' ' || *text == '\n' || *text == '\t';
        if (!space) h = (h ^ (unsigned char)*text) * 1099511628211ULL;
        if (space && in_word) out[i++] = h = (h ^ 0xff) * 1099511628211ULL;
        in_word = !space;
    }
    if (in_word && i < n) out[i] = (h ^ 0xff) * 1099511628211ULL;
    return out;
}

static struct prefix_block* block_find(struct npu_model* m, uint64_t hash) {
    for (size_t i = 0; i < m->nblocks; i++)
        if (m->blocks[i].hash == hash) return &m->blocks[i];
    return NULL;
}

/* block_put stores a block, evicting the least recently used block that
 * no other block follows when the cache is full. */
static void block_put(struct npu_model* m, uint64_t hash, uint64_t prev) {
    struct prefix_block* b = block_find(m, hash);
    if (b) {
        b->used = ++m->clock;
        return;
    }
    if (m->max_blocks == 0) return;
    if (m->nblocks >= m->max_blocks) {
        size_t victim = m->nblocks;
        for (size_t i = 0; i < m->nblocks; i++) {
            int parent = 0;
            for (size_t j = 0; j < m->nblocks && !parent; j++) parent = m->blocks[j].prev == m->blocks[i].hash;
            if (!parent && (victim == m->nblocks || m->blocks[i].used < m->blocks[victim].used)) victim = i;
        }
        if (victim == m->nblocks) return; /* nothing can go: the block is not kept */
        m->blocks[victim] = m->blocks[--m->nblocks];
    }
    m->blocks[m->nblocks++] = (struct prefix_block){.hash = hash, .prev = prev, .used = ++m->clock};
}

/* npu_prefill models NPUW's prefill of n tokens (the whole templated
 * history) and returns its cost in microseconds. */
static double npu_prefill(struct npu_model* m, const ovtest_vocab* vocab, const char* input, size_t n) {
    double per_token = knob("OVTEST_NPU_PREFILL_US_PER_TOKEN", 1172);
    double attention = knob("OVTEST_NPU_ATTENTION_NS", 267) / 1000.0;
    double cost = knob("OVTEST_NPU_PREFILL_FIXED_MS", 100) * 1000.0;
    if (m->chunk == 0) {
        /* One static prefill, shaped for the whole prompt length. */
        atomic_store(&last_restored, 0);
        atomic_store(&last_chunks, 1);
        return cost + per_token * (double)m->max_prompt;
    }
    size_t restored = 0;
    uint64_t* hashes = m->prefix_caching ? token_hashes(vocab, input, n) : NULL;
    pthread_mutex_lock(&m->mu);
    if (hashes) {
        size_t limit = m->max_prompt - m->chunk;
        for (size_t b = 0; (b + 1) * m->block <= n; b++) {
            struct prefix_block* found = block_find(m, hashes[(b + 1) * m->block - 1]);
            if (!found) break;
            found->used = ++m->clock;
            restored += m->block;
            if (restored + m->block > limit) break;
            if (restored == n) { /* at least one token is computed, for the logits */
                restored -= m->block;
                break;
            }
        }
        restored -= restored % m->chunk;
    }
    size_t chunks = 0;
    for (size_t at = restored; at < n; at += m->chunk, chunks++) {
        /* Every chunk has the compiled shape: a short last one costs a
         * whole one, and attends to everything before it. */
        cost += per_token * (double)m->chunk + attention * (double)m->chunk * (double)at;
        if (hashes && at + m->chunk <= n && m->block <= m->chunk) /* only full chunks are stored */
            for (size_t b = at; b + m->block <= at + m->chunk; b += m->block)
                block_put(m, hashes[b + m->block - 1], b ? hashes[b - 1] : 0);
    }
    pthread_mutex_unlock(&m->mu);
    free(hashes);
    atomic_store(&last_restored, (int)restored);
    atomic_store(&last_chunks, (int)chunks);
    return cost;
}

static double npu_prefill_cost(ov_genai_llm_pipeline* pipe, const char* input, size_t n);

/* ---- pipeline ---- */

/* How a model writes a tool call, as its chat template taught it. */
enum tool_format { TOOLS_NONE, TOOLS_HERMES, TOOLS_LLAMA3, TOOLS_MISTRAL, TOOLS_PHI4 };

/* How the last generate fed the pipeline: GenAI's stateful (NPU) pipeline
 * remembers it and refuses to switch until finish_chat
 * (src/cpp/src/llm/pipeline_stateful.cpp). */
enum input_kind { INPUT_NONE, INPUT_STRING, INPUT_HISTORY };

struct ov_genai_llm_pipeline_opaque {
    char device[32];
    size_t max_prompt_len;
    float load_ms;
    atomic_int busy;
    int has_chat_template;
    /* passthrough: the tokenizer IR's rt_info chat_template renders each
     * message's content and nothing else (npud's prompt view,
     * npu/openvino/promptview.go): a string prompt is the whole prompt, and
     * the model learns from it whether to think and which tools it has. */
    int passthrough;
    int thinks; /* its template takes enable_thinking (Qwen3): it reasons unless told not to */
    enum tool_format tool_format; /* how its template taught it to call tools; TOOLS_NONE: it renders none */
    enum input_kind chat_input; /* INPUT_NONE outside a chat */
    size_t min_response_len;
    /* The CPU/GPU pipeline GenAI built: continuous batching (0), or the
     * stateful one (1) when ATTENTION_BACKEND is SDPA or paged attention
     * failed to start (src/cpp/src/llm/pipeline.cpp). The NPU is always
     * stateful, with the whole history each turn (npu_model). */
    int stateful;
    char* cached_history; /* the history whose KV cache the CPU/GPU stateful pipeline holds */
    size_t cached_answer;  /* and the tokens it generated after it, cached too */
    struct npu_model npu;  /* on the NPU: what NPUW compiled, and its prefix cache */
    /* The folder's generation_config.json's max_new_tokens and max_length
     * (SIZE_MAX: not there), the start of every generation config. */
    size_t max_new_tokens, max_length;
    /* The folder's tokenizer.json, read once (GenAI compiles the folder's
     * tokenizer IR once per pipeline): NULL, the test model's words. */
    ovtest_vocab* vocab;
};

struct ov_genai_perf_metrics_opaque {
    float load_ms, ttft_ms, tpot_ms, generate_ms;
    size_t input_tokens, generated_tokens;
};

struct ov_genai_decoded_results_opaque {
    struct ov_genai_perf_metrics_opaque metrics;
    char* text; /* the generated text, every token's: what get_string answers */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* is_npu: "NPU" or an indexed "NPU.N". */
static int is_npu(const char* device) { return strncmp(device, "NPU", 3) == 0 && (!device[3] || device[3] == '.'); }

/* read_head reads the start of a file into buf (NUL-terminated). */
static size_t read_head(const char* path, char* buf, size_t size) {
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    return n;
}

/* The template takes enable_thinking: the model reasons first, in
 * <think>...</think>, unless the extra context sets it false (Qwen3). The
 * template is in tokenizer_config.json or chat_template.jinja, the latter
 * read last (tokenizer_impl.cpp, parse_chat_template_from_file). */
static int folder_template_thinks(const char* dir) {
    static const char* const files[] = {"tokenizer_config.json", "chat_template.jinja"};
    char path[4096];
    char* buf = malloc(65536);
    int thinks = 0;
    for (size_t i = 0; i < 2 && !thinks; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        thinks = read_head(path, buf, 65536) && strstr(buf, "enable_thinking") != NULL;
    }
    free(buf);
    return thinks;
}

/* folder_tool_format: the template renders tools, in one family's way
 * (what npu/modelstore detects the same way). */
static enum tool_format folder_tool_format(const char* dir) {
    static const char* const files[] = {"tokenizer_config.json", "chat_template.jinja"};
    char path[4096];
    char* buf = malloc(65536);
    enum tool_format found = TOOLS_NONE;
    for (size_t i = 0; i < 2 && found == TOOLS_NONE; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (!read_head(path, buf, 65536) || !strstr(buf, "tools")) continue;
        if (strstr(buf, "<tool_call>")) found = TOOLS_HERMES;
        else if (strstr(buf, "[TOOL_CALLS]")) found = TOOLS_MISTRAL;
        else if (strstr(buf, "<|python_tag|>")) found = TOOLS_LLAMA3;
        else if (strstr(buf, "<|tool_call|>")) found = TOOLS_PHI4;
    }
    free(buf);
    return found;
}

/* A model folder has a chat template when its tokenizer_config.json or
 * chat_template.jinja carries a non-empty one (a subset of where GenAI's
 * Tokenizer looks; npu/modelstore/chattemplate.go checks every place). */
static int folder_has_chat_template(const char* dir) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    if (stat(path, &st) == 0 && st.st_size > 0) return 1;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    char buf[8192];
    if (!read_head(path, buf, sizeof buf)) return 0;
    char* key = strstr(buf, "\"chat_template\"");
    if (!key) return 0;
    char* v = strchr(key + 15, ':');
    if (!v) return 0;
    for (v++; *v == ' ' || *v == '\t' || *v == '\n'; v++) {
    }
    return !(v[0] == '"' && v[1] == '"') && *v != 'n'; /* "" and null are no template */
}

/* The chat template npud's prompt view puts in the tokenizer IR's rt_info
 * (npu/openvino/promptview.go: passThroughTemplate). */
#define PASSTHROUGH_TEMPLATE "{% for message in messages %}{{ message.content }}{% endfor %}"

/* ir_chat_template: 0 when the tokenizer IR's rt_info holds no chat
 * template, 1 when it holds one, 2 when that one is npud's pass-through
 * template. GenAI takes the rt_info's template over every file's
 * (tokenizer_impl.cpp: setup_tokenizer, parse_chat_template_from_tokenizer). */
static int ir_chat_template(const char* dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/openvino_tokenizer.xml", dir);
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    size_t cap = 16 << 20, n = 0;
    char* buf = malloc(cap + 1);
    if (buf) n = fread(buf, 1, cap, f);
    fclose(f);
    if (!buf) return 0;
    buf[n] = 0;
    int found = 0;
    const char* at = strstr(buf, "<chat_template value=\"");
    if (at) {
        at += strlen("<chat_template value=\"");
        if (strncmp(at, PASSTHROUGH_TEMPLATE "\"", strlen(PASSTHROUGH_TEMPLATE) + 1) == 0) found = 2;
        else found = *at != '"';
    }
    free(buf);
    return found;
}

/* last_of is the position of the last occurrence of needle in text, or -1. */
static long last_of(const char* text, const char* needle) {
    long pos = -1;
    for (const char* at = strstr(text, needle); at; at = strstr(at + 1, needle)) pos = at - text;
    return pos;
}

/* prompt_tool_call is the test model's call when the prompt it was given
 * whole (a pass-through template) declares tools in its family's way and
 * does not end with a tool's result: a call of the first tool declared,
 * with its first required argument. NULL: no call. */
static char* prompt_tool_call(const ov_genai_llm_pipeline* pipe, const char* prompt) {
    if (pipe->tool_format == TOOLS_NONE) return NULL;
    static const char* const results[] = {"<tool_response>", "[TOOL_RESULTS]", "ipython<|end_header_id|>", "<|tool_response|>"};
    static const char* const users[] = {"<|im_start|>user\n", "[INST]", "user<|end_header_id|>", "<|user|>"};
    long result = -1, user = -1;
    for (size_t i = 0; i < 4; i++) {
        long r = last_of(prompt, results[i]), u = last_of(prompt, users[i]);
        if (r > result) result = r;
        if (u > user && strncmp(prompt + u + strlen(users[i]), "<tool_response>", 15) != 0) user = u;
    }
    if (result > user) return NULL; /* it answers with the result */
    const char* fn = strstr(prompt, "\"function\": {\"name\": \"");
    if (!fn) return NULL;
    fn += strlen("\"function\": {\"name\": \"");
    const char* end = strchr(fn, '"');
    if (!end) return NULL;
    char name[256], args[512] = "{}";
    snprintf(name, sizeof name, "%.*s", (int)(end - fn), fn);
    const char* req = strstr(end, "\"required\": [\"");
    const char* next = strstr(end, "\"function\": {");
    if (req && (!next || req < next)) {
        req += strlen("\"required\": [\"");
        const char* q = strchr(req, '"');
        if (q) snprintf(args, sizeof args, "{\"%.*s\": \"ovtest\"}", (int)(q - req), req);
    }
    char* out = malloc(strlen(name) + strlen(args) + 64);
    switch (pipe->tool_format) {
    case TOOLS_HERMES:
        sprintf(out, "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", name, args);
        break;
    case TOOLS_LLAMA3:
        sprintf(out, "{\"name\": \"%s\", \"parameters\": %s}", name, args);
        break;
    default: /* Mistral, Phi-4-mini: a list */
        sprintf(out, "[{\"name\": \"%s\", \"arguments\": %s}]", name, args);
        break;
    }
    return out;
}

static int device_available(const char* device) {
    char* list = strdup(ovtest_devices());
    int found = 0;
    char* save = NULL;
    size_t n = strlen(device);
    /* "NPU" names the first NPU when only indexed names ("NPU.0") are listed,
     * as OpenVINO's plugin lookup does. */
    for (char* tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, device) == 0 || (strncmp(tok, device, n) == 0 && tok[n] == '.')) found = 1;
    free(list);
    return found;
}

#define MAX_PROPERTIES 64

struct properties {
    const char* key[MAX_PROPERTIES];
    const char* value[MAX_PROPERTIES];
    size_t n;
};

static const char* prop(const struct properties* p, const char* key) {
    const char* found = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->key[i], key) == 0) found = p->value[i]; /* the last one wins, as in an AnyMap */
    return found;
}

/* stoi is std::stoi: leading blanks, a sign, digits, anything after
 * ignored; nothing to convert throws. */
static int stoi(const char* s, long* out) {
    char* end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s) return 0;
    *out = v;
    return 1;
}

/* npu_uint parses an NPU plugin integer option (std::stoul, the whole text). */
static int npu_uint(const char* s, size_t* out) {
    char* end = NULL;
    if (!s[0] || s[0] == '-') return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end) return 0;
    *out = (size_t)v;
    return 1;
}

/* npu_bool parses an NPU plugin boolean option: YES or NO. */
static int npu_bool(const char* s, int* out) {
    if (strcmp(s, "YES") == 0) return *out = 1, 1;
    if (strcmp(s, "NO") == 0) return *out = 0, 1;
    return 0;
}

/* gemma3_vlm: GenAI forces NPUW_LLM_PREFILL_HINT=STATIC for Gemma3 vision
 * models (visual_language/pipeline.cpp: update_npu_properties), whose
 * language model takes token_type_ids and inputs_embeds, which NPUW cannot
 * chunk. */
static int gemma3_vlm(const char* dir) {
    char path[4096], buf[8192];
    snprintf(path, sizeof path, "%s/config.json", dir);
    return read_head(path, buf, sizeof buf) && strstr(buf, "\"gemma3\"") != NULL;
}

/* configure applies the properties as GenAI and the plugins would, or
 * returns 0 where they throw. */
static int configure(const struct properties* p, const char* dir, const char* device, int vlm, size_t* max_prompt_len,
                     size_t* min_response_len, struct npu_model* npu, int* stateful) {
    static const char* const npu_keys[] = {"MAX_PROMPT_LEN", "MIN_RESPONSE_LEN", "PREFILL_HINT", "GENERATE_HINT",
                                           "NPUW_LLM_PREFILL_HINT", "NPUW_LLM_GENERATE_HINT",
                                           "NPUW_LLM_PREFILL_CHUNK_SIZE", "NPUW_LLM_ENABLE_PREFIX_CACHING",
                                           "NPUW_LLM_PREFIX_CACHING_BLOCK_SIZE",
                                           "NPUW_LLM_PREFIX_CACHING_MAX_NUM_BLOCKS"};
    static const char* const any_keys[] = {"CACHE_DIR", "ATTENTION_BACKEND", "PERFORMANCE_HINT",
                                           "INFERENCE_PRECISION_HINT", "KV_CACHE_PRECISION", "NUM_STREAMS"};
    int on_npu = is_npu(device);
    for (size_t i = 0; i < p->n; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof any_keys / sizeof *any_keys; k++) known |= strcmp(p->key[i], any_keys[k]) == 0;
        for (size_t k = 0; on_npu && k < sizeof npu_keys / sizeof *npu_keys; k++) known |= strcmp(p->key[i], npu_keys[k]) == 0;
        if (!known) return 0; /* the plugin refuses a key it does not know */
    }
    const char* backend = prop(p, "ATTENTION_BACKEND");
    if (backend && strcmp(backend, "PA") != 0 && strcmp(backend, "SDPA") != 0) return 0; /* utils.cpp: extract_attention_backend */
    if (!on_npu) {
        /* CPU/GPU: continuous batching on paged attention, unless SDPA is
         * asked for, or paged attention fails to start (a model folder
         * holding no_paged_attention here): then GenAI falls back to the
         * stateful pipeline quietly, or fails when PA was asked for
         * explicitly (src/cpp/src/llm/pipeline.cpp). */
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/no_paged_attention", dir);
        int pa_fails = stat(path, &st) == 0;
        if (backend && strcmp(backend, "PA") == 0 && pa_fails) return 0;
        *stateful = (backend && strcmp(backend, "SDPA") == 0) || pa_fails;
        return 1;
    }
    /* The C wrapper turns MAX_PROMPT_LEN and MIN_RESPONSE_LEN into integers
     * only for the device named exactly "NPU" (src/c/src/llm_pipeline.cpp);
     * GenAI's NPU path then insists on integers (utils.cpp:
     * pop_int_and_cast), so for "NPU.0" a value throws. */
    const char* lens[2] = {prop(p, "MAX_PROMPT_LEN"), prop(p, "MIN_RESPONSE_LEN")};
    size_t* outs[2] = {max_prompt_len, min_response_len};
    for (int i = 0; i < 2; i++) {
        if (!lens[i]) continue;
        long v = 0;
        if (strcmp(device, "NPU") != 0 || !stoi(lens[i], &v) || v < 0 || v > INT32_MAX) return 0;
        *outs[i] = (size_t)v;
    }
    /* PREFILL_HINT is renamed to NPUW_LLM_PREFILL_HINT over what was there
     * (utils.cpp: rename_key), after the Gemma3 VLM's STATIC was inserted
     * only where nothing was set. */
    const char* hint = prop(p, "NPUW_LLM_PREFILL_HINT");
    if (!hint && vlm && gemma3_vlm(dir)) hint = "STATIC";
    if (prop(p, "PREFILL_HINT")) hint = prop(p, "PREFILL_HINT");
    if (!hint) hint = "DYNAMIC"; /* NPUW's default */
    if (strcmp(hint, "DYNAMIC") != 0 && strcmp(hint, "STATIC") != 0) return 0;
    const char* gen = prop(p, "GENERATE_HINT") ? prop(p, "GENERATE_HINT") : prop(p, "NPUW_LLM_GENERATE_HINT");
    if (gen && strcmp(gen, "FAST_COMPILE") != 0 && strcmp(gen, "BEST_PERF") != 0) return 0;
    size_t chunk = 1024, block = 256, max_blocks = 128;
    int caching = 0;
    const char* v;
    if ((v = prop(p, "NPUW_LLM_PREFILL_CHUNK_SIZE")) && !npu_uint(v, &chunk)) return 0;
    if ((v = prop(p, "NPUW_LLM_ENABLE_PREFIX_CACHING")) && !npu_bool(v, &caching)) return 0;
    if ((v = prop(p, "NPUW_LLM_PREFIX_CACHING_BLOCK_SIZE")) && !npu_uint(v, &block)) return 0;
    if ((v = prop(p, "NPUW_LLM_PREFIX_CACHING_MAX_NUM_BLOCKS")) && !npu_uint(v, &max_blocks)) return 0;
    /* llm_compiled_model.cpp */
    size_t shape = align_up(*max_prompt_len, NPU_ALIGN);
    int chunking = strcmp(hint, "DYNAMIC") == 0 && chunk > 0;
    if (chunking) {
        if (vlm && gemma3_vlm(dir)) return 0; /* "Chunking is not implemented for Gemma model family yet" */
        if (chunk >= shape) {
            chunking = 0;
        } else {
            if (chunk & (chunk - 1)) return 0; /* the chunk size must be a power of two */
            shape = align_up(shape, chunk);
        }
    }
    npu->max_prompt = shape;
    npu->chunk = chunking ? chunk : 0;
    npu->prefix_caching = chunking && caching;
    if (npu->prefix_caching && (block == 0 || chunk % block != 0)) block = chunk; /* adjusted to the chunk */
    npu->block = block;
    npu->max_blocks = max_blocks;
    npu->blocks = npu->prefix_caching ? calloc(max_blocks ? max_blocks : 1, sizeof *npu->blocks) : NULL;
    return 1;
}

/* compile_cost models the NPU's compile: minutes the first time, a fraction
 * when CACHE_DIR holds the blob OpenVINO wrote for the same model and
 * properties (the core's model cache). */
static void compile_cost(const struct properties* p, const char* dir, const char* device) {
    double us = knob("OVTEST_NPU_COMPILE_MS", 120000) * 1000.0;
    int cached = 0;
    const char* cache = prop(p, "CACHE_DIR");
    if (cache && *cache) {
        uint64_t h = fnv1a(dir, fnv1a(device, 1469598103934665603ULL));
        for (size_t i = 0; i < p->n; i++)
            if (strcmp(p->key[i], "CACHE_DIR") != 0) h = fnv1a(p->value[i], fnv1a(p->key[i], h));
        char blob[4096];
        snprintf(blob, sizeof blob, "%s/ovtest_%016llx.blob", cache, (unsigned long long)h);
        struct stat st;
        if (stat(blob, &st) == 0) {
            cached = 1;
            us = us * knob("OVTEST_NPU_CACHED_COMPILE_PERCENT", 10) / 100.0;
        } else {
            FILE* f = fopen(blob, "w");
            if (f) {
                fputs("ovtest compiled model\n", f);
                fclose(f);
            }
        }
    }
    atomic_store(&last_compile_us, (long long)us);
    atomic_store(&last_compile_cached, cached);
    spend(us);
}

int ovtest_tokenizers_load(void) {
#ifdef _WIN32
    return 1;
#else
    const char* path = getenv("OPENVINO_TOKENIZERS_PATH_GENAI");
    char beside[PATH_MAX + 64];
    if (!path || !*path) {
        Dl_info info;
        char real[PATH_MAX];
        if (!dladdr((void*)ovtest_tokenizers_load, &info) || !realpath(info.dli_fname, real)) return 0;
        char* slash = strrchr(real, '/');
        if (slash) *slash = 0;
        snprintf(beside, sizeof beside, "%s/libopenvino_tokenizers.so", real);
        path = beside;
    }
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    int ok = dlsym(h, "create_extensions") != NULL;
    dlclose(h);
    return ok;
#endif
}

/* pipeline_create compiles the language model in model_file of
 * models_path (the LLM's openvino_model.xml, a VLM's
 * openvino_language_model.xml). */
static ov_status_e pipeline_create(const char* models_path, const char* model_file, const char* device,
                                   const size_t property_args_size, ov_genai_llm_pipeline** pipe, va_list ap) {
    if (!models_path || !device || !pipe || property_args_size % 2 != 0) return INVALID_C_PARAM;
    double start = now_ms();
    struct properties props = {0};
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* key = va_arg(ap, const char*);
        const char* value = va_arg(ap, const char*);
        if (!key || !value || props.n == MAX_PROPERTIES) return UNKNOW_EXCEPTION;
        props.key[props.n] = key;
        props.value[props.n++] = value;
    }
    if (!ovtest_tokenizers_load()) return UNKNOW_EXCEPTION; /* "openvino_tokenizers path is not set" or unloadable */
    int vlm = strcmp(model_file, "openvino_language_model.xml") == 0;
    size_t max_prompt_len = 1024, min_response_len = 128; /* GenAI's NPU defaults */
    struct npu_model npu = {0};
    int stateful = 0;
    if (!configure(&props, models_path, device, vlm, &max_prompt_len, &min_response_len, &npu, &stateful))
        return UNKNOW_EXCEPTION;
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/%s", models_path, model_file);
    struct stat st;
    const char* broken = getenv("OVTEST_BROKEN_DEVICES"); /* devices that fail to compile any model */
    if (stat(xml, &st) != 0 || !device_available(device) || (broken && strstr(broken, device)))
        return UNKNOW_EXCEPTION;
    char slow[4096];
    snprintf(slow, sizeof slow, "%s/slow_compile", models_path);
    char fault[4096];
    snprintf(fault, sizeof fault, "%s/crash_on_load", models_path);
    if (stat(fault, &st) == 0) {
        /* The file may name the devices it crashes on; empty, all of them. */
        char which[256] = "";
        FILE* f = fopen(fault, "r");
        if (f) {
            size_t n = fread(which, 1, sizeof which - 1, f);
            which[n] = 0;
            fclose(f);
        }
        if (!which[0] || strstr(which, device)) crash();
    }
#ifndef _WIN32
    snprintf(fault, sizeof fault, "%s/kill_on_load", models_path);
    if (stat(fault, &st) == 0) kill(getpid(), SIGKILL); /* the OOM killer, mid-compile */
#endif
    const char* compile_delay = getenv("OVTEST_COMPILE_DELAY_US");
    if (compile_delay && stat(slow, &st) == 0)
        usleep((useconds_t)strtoul(compile_delay, NULL, 10)); /* an NPU compile takes minutes */
    /* GenAI reads the folder's generation_config.json when there is one,
     * and fails on one that is not JSON (src/cpp/src/generation_config.cpp:
     * the GenerationConfig constructor, nlohmann::json::parse). */
    static const char* const lengths[] = {"max_new_tokens", "max_length"};
    size_t limits[2] = {SIZE_MAX, SIZE_MAX};
    char gen_config[4096];
    snprintf(gen_config, sizeof gen_config, "%s/generation_config.json", models_path);
    if (ovtest_json_sizes(gen_config, lengths, limits, 2) != 0) return UNKNOW_EXCEPTION;
    ovtest_vocab* vocab = NULL;
    char why[600];
    if (ovtest_vocab_open(models_path, &vocab, why, sizeof why) != 0) return UNKNOW_EXCEPTION; /* GenAI's Tokenizer throws */
    if (is_npu(device)) compile_cost(&props, models_path, device);
    *pipe = calloc(1, sizeof(ov_genai_llm_pipeline));
    (*pipe)->vocab = vocab;
    (*pipe)->max_new_tokens = limits[0];
    (*pipe)->max_length = limits[1];
    snprintf((*pipe)->device, sizeof (*pipe)->device, "%s", device);
    (*pipe)->max_prompt_len = max_prompt_len;
    (*pipe)->min_response_len = min_response_len;
    (*pipe)->stateful = stateful;
    (*pipe)->npu = npu;
    pthread_mutex_init(&(*pipe)->npu.mu, NULL);
    int in_ir = ir_chat_template(models_path);
    (*pipe)->has_chat_template = in_ir || folder_has_chat_template(models_path);
    (*pipe)->passthrough = in_ir == 2;
    (*pipe)->thinks = folder_template_thinks(models_path);
    (*pipe)->tool_format = folder_tool_format(models_path);
    (*pipe)->load_ms = (float)(now_ms() - start);
    ovtest_object_created();
    return OK;
}

ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_llm_pipeline** pipe, ...) {
    va_list ap;
    va_start(ap, pipe);
    ov_status_e st = pipeline_create(models_path, "openvino_model.xml", device, property_args_size, pipe, ap);
    va_end(ap);
    return st;
}

void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe) {
    if (!pipe) return;
    /* GenAI frees the pipeline whatever it is doing: poison it, so that a
     * generate still running on it fails loudly (and ASan reports the use). */
    free(pipe->cached_history);
    free(pipe->npu.blocks);
    ovtest_vocab_free(pipe->vocab);
    pthread_mutex_destroy(&pipe->npu.mu);
    memset(pipe, 0xdd, sizeof *pipe);
    free(pipe);
    ovtest_object_freed();
}

ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe,
                                                        ov_genai_generation_config** config) {
    if (!pipe || !config) return INVALID_C_PARAM;
    ov_status_e st = ov_genai_generation_config_create(config);
    /* GenAI starts from the model's generation_config.json: few real ones
     * set max_new_tokens or max_length, so both mostly stay SIZE_MAX and
     * without a cap of the caller's a generation ends only at EOS. */
    if (st == OK) {
        (*config)->max_new_tokens = pipe->max_new_tokens;
        (*config)->max_length = pipe->max_length;
    }
    return st;
}

/* The test model's vocabulary: ASCII words, multi-byte words, an emoji that
 * the model spells as two byte-fallback tokens (neither half is valid UTF-8
 * alone), and a full stop that ends a line. */
static const char* const vocab[] = {"the", "npu", "answers", "quickly", "and", "quietly", "café", "日本", "🙂",
                                    "tokens", "flow", "through", "a", "bridge", "to", "clients", ".\n"};
#define VOCAB_SIZE (sizeof vocab / sizeof vocab[0])
#define MAX_TOKEN 32

static uint64_t fnv1a(const char* s, uint64_t h) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* A prompt's tokens, as the test core's tokenizer counts them with the
 * model folder's tokenizer.json (ovtest.h). */
static size_t count_tokens(const ov_genai_llm_pipeline* pipe, const char* text) {
    return ovtest_tokenize(pipe->vocab, text, NULL, 0);
}

/* The test model's token stream: word after word, a word being one token or,
 * for the emoji, two. */
struct tokens {
    uint64_t seed;
    size_t word;   /* the word being spelled */
    int piece;     /* the emoji's second half comes next */
    int line_start;
};

static void next_token(struct tokens* t, char* buf) {
    uint64_t h = (t->seed + t->word * 0x9e3779b97f4a7c15ULL) * 6364136223846793005ULL;
    const char* w = vocab[(h >> 33) % VOCAB_SIZE];
    const char* space = t->word == 0 || t->line_start || strcmp(w, ".\n") == 0 ? "" : " ";
    if (strcmp(w, "🙂") == 0) {
        if (!t->piece) {
            snprintf(buf, MAX_TOKEN, "%s%.2s", space, w); /* F0 9F: a code point's first half */
            t->piece = 1;
            return;
        }
        snprintf(buf, MAX_TOKEN, "%s", w + 2);
        t->piece = 0;
    } else {
        snprintf(buf, MAX_TOKEN, "%s%s", space, w);
    }
    t->line_start = strcmp(w, ".\n") == 0;
    t->word++;
}

/* ---- GenAI's TextStreamer (src/cpp/src/text_streamer.cpp), over the test
 * model's tokens: decoding a token list is concatenating the tokens. ---- */

struct text_streamer {
    const streamer_callback* cb;
    char* text;            /* the decoded cache */
    size_t len, cap;
    long* lengths;         /* decoded length at each cached position; -1: ends mid code point */
    size_t n, ncap;
    size_t printed;        /* bytes of text already given to the callback */
    pthread_t caller;
    atomic_int foreign;    /* a callback ran on a thread other than the caller's */
    int stopped;           /* a callback answered STOP or CANCEL */
    int fault;             /* a native fault after the first callback (enum fault) */
    int after_stop;        /* calls after that answer */
};

/* incomplete: the text ends inside a UTF-8 sequence (GenAI's decode ends it
 * with U+FFFD then). */
static int incomplete(const char* s, size_t n) {
    size_t i = n, cont = 0;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80 && cont < 3) i--, cont++;
    if (i == 0) return cont > 0;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
    return need > cont;
}

static ov_genai_streaming_status_e streamer_call(struct text_streamer* s, const char* from, size_t n) {
    if (n == 0) return OV_GENAI_STREAMING_STATUS_RUNNING; /* never called with empty text */
    char* word = malloc(n + 1);                          /* a std::string's c_str(): gone after the call */
    memcpy(word, from, n);
    word[n] = 0;
    if (!pthread_equal(pthread_self(), s->caller)) atomic_store(&s->foreign, 1);
    if (s->stopped) s->after_stop++;
    ov_genai_streaming_status_e st = s->cb->callback_func(word, s->cb->args);
    free(word);
    if (st != OV_GENAI_STREAMING_STATUS_RUNNING) s->stopped = 1;
    switch (s->stopped ? FAULT_NONE : (enum fault)s->fault) {
    case FAULT_CRASH: crash(); break;
    case FAULT_ABORT: abort();
    case FAULT_HANG: hang_forever(); break;
    case FAULT_NONE: break;
    }
    return st;
}

static void streamer_clear(struct text_streamer* s) {
    s->len = s->n = s->printed = 0;
}

static ov_genai_streaming_status_e streamer_write(struct text_streamer* s, const char* token) {
    size_t t = strlen(token);
    if (s->len + t + 1 > s->cap) {
        s->cap = (s->len + t + 1) * 2;
        s->text = realloc(s->text, s->cap);
    }
    memcpy(s->text + s->len, token, t);
    s->len += t;
    if (s->n == s->ncap) {
        s->ncap = s->ncap ? s->ncap * 2 : 16;
        s->lengths = realloc(s->lengths, s->ncap * sizeof *s->lengths);
    }
    s->lengths[s->n++] = (long)s->len;
    if (s->len > 0 && s->text[s->len - 1] == '\n' && s->len > s->printed) {
        /* A newline flushes the whole cache. */
        ov_genai_streaming_status_e st = streamer_call(s, s->text + s->printed, s->len - s->printed);
        streamer_clear(s);
        return st;
    }
    if (incomplete(s->text, s->len)) {
        s->lengths[s->n - 1] = -1; /* held back until the code point completes */
        return OV_GENAI_STREAMING_STATUS_RUNNING;
    }
    if (s->n < 3) return OV_GENAI_STREAMING_STATUS_RUNNING; /* the last 3 tokens are held back */
    long until = s->lengths[s->n - 3];
    if (until < 0 || (size_t)until <= s->printed) return OV_GENAI_STREAMING_STATUS_RUNNING;
    ov_genai_streaming_status_e st = streamer_call(s, s->text + s->printed, (size_t)until - s->printed);
    s->printed = (size_t)until;
    return st;
}

/* streamer_end is TextStreamer::end: what is still held back goes to the
 * callback, whose answer is ignored. Every generation ends with it. */
static void streamer_end(struct text_streamer* s) {
    if (s->len > s->printed) (void)streamer_call(s, s->text + s->printed, s->len - s->printed);
    streamer_clear(s);
}

static void streamer_free(struct text_streamer* s) {
    free(s->text);
    free(s->lengths);
}

/* ---- the generation loops ---- */

struct run {
    ov_genai_llm_pipeline* pipe;
    struct text_streamer* streamer; /* NULL without a callback */
    struct tokens tokens;
    struct tokens thoughts; /* the reasoning's words */
    int think;              /* tokens of the <think> block still to come */
    const char* script;     /* a tool call to write instead of words, or NULL */
    size_t script_at;
    const char* prefix;     /* what the model says first (what it saw in the images), or NULL */
    size_t prefix_at;
    size_t length;
    long delay_us;
    /* With the folder's BPE tokenizer: the answer's tokens, its text
     * tokenized whole (BPE splits words into pieces, gives whitespace
     * and tags tokens of their own), each piece NUL-terminated in order. */
    char* pieces;
    size_t npieces, piece_at;
    /* out */
    size_t generated, written;
    char* answer; /* every generated token's text: DecodedResults */
    size_t answer_len;
    int stopped;  /* the callback answered STOP or CANCEL */
    double first_token_ms;
};

/* THINK_WORDS is the test model's reasoning length: "<think>", the words,
 * "</think>" and a blank line. */
#define THINK_WORDS 6
#define THINK_TOKENS (THINK_WORDS + 3)

/* run_token is the model's next token: its <think> block first when it
 * reasons, then its answer. */
static void run_token(struct run* r, char* buf) {
    if (r->pieces) {
        snprintf(buf, MAX_TOKEN, "%s", r->pieces + r->piece_at);
        r->piece_at += strlen(buf) + 1;
        return;
    }
    if (r->think > 0) {
        int step = THINK_TOKENS - r->think--;
        if (step == 0) snprintf(buf, MAX_TOKEN, "<think>\n");
        else if (step <= THINK_WORDS) next_token(&r->thoughts, buf);
        else if (step == THINK_WORDS + 1) snprintf(buf, MAX_TOKEN, "\n</think>");
        else snprintf(buf, MAX_TOKEN, "\n\n");
        return;
    }
    if (r->prefix && r->prefix[r->prefix_at]) {
        snprintf(buf, MAX_TOKEN, "%.3s", r->prefix + r->prefix_at);
        r->prefix_at += strlen(buf);
        return;
    }
    if (r->script) {
        /* JSON comes out of a tokenizer in short pieces. */
        snprintf(buf, MAX_TOKEN, "%.3s", r->script + r->script_at);
        r->script_at += strlen(buf);
        return;
    }
    next_token(&r->tokens, buf);
}

/* bpe_pieces is the answer r would write, as the folder's tokenizer
 * tokenizes it: its pieces, each NUL-terminated, and how many. NULL when a
 * token does not fit a test token's buffer (then the word tokens stay). */
static char* bpe_pieces(const ovtest_vocab* vocab, struct run r, size_t tokens, size_t* count) {
    char tok[MAX_TOKEN];
    size_t len = 0;
    char* text = malloc(tokens * MAX_TOKEN + 1);
    for (size_t i = 0; i < tokens; i++) {
        run_token(&r, tok);
        size_t t = strlen(tok);
        memcpy(text + len, tok, t);
        len += t;
    }
    text[len] = 0;
    int64_t* ids = malloc((len + 1) * sizeof *ids);
    size_t n = ovtest_tokenize(vocab, text, ids, len);
    char* pieces = malloc(len + n + 1);
    size_t at = 0, kept = 0;
    for (size_t i = 0; pieces && i < n; i++) {
        size_t t = ovtest_vocab_decode(vocab, ids[i], pieces + at, MAX_TOKEN);
        if (t >= MAX_TOKEN) {
            free(pieces);
            pieces = NULL;
        } else { /* a special token is generated, and decodes to nothing */
            pieces[at + t] = 0;
            at += t + 1;
            kept++;
        }
    }
    free(ids);
    free(text);
    *count = kept;
    return pieces;
}

static void run_append(struct run* r, const char* tok) {
    size_t t = strlen(tok);
    r->answer = realloc(r->answer, r->answer_len + t + 1);
    memcpy(r->answer + r->answer_len, tok, t + 1);
    r->answer_len += t;
    r->generated++;
    if (r->first_token_ms == 0) r->first_token_ms = now_ms();
}

/* The stateful pipeline (the NPU's, or CPU/GPU's without paged attention):
 * the callback runs on the caller's thread,
 * after each token; STOP or CANCEL ends the loop at once. */
static void run_stateful(struct run* r) {
    char tok[MAX_TOKEN];
    for (size_t i = 0; i < r->length; i++) {
        if (i > 0 && r->delay_us > 0) usleep((useconds_t)r->delay_us);
        run_token(r, tok);
        run_append(r, tok);
        if (!r->streamer) continue;
        r->written++;
        if (streamer_write(r->streamer, tok) != OV_GENAI_STREAMING_STATUS_RUNNING) {
            r->stopped = 1;
            break;
        }
    }
    if (r->streamer) streamer_end(r->streamer);
}

/* The continuous-batching (CPU/GPU) pipeline streams from a thread of its
 * own (ThreadedStreamerWrapper): the generation loop queues tokens and
 * only looks at the streamer's answer before queueing the next, so tokens
 * generated meanwhile are counted but never written; the final flush runs
 * on the caller's thread after the streamer thread is joined. */
struct token_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char (*items)[MAX_TOKEN];
    size_t head, tail, cap;
    int closed;
    atomic_int status;
    struct run* run;
};

static void queue_push(struct token_queue* q, const char* tok) {
    pthread_mutex_lock(&q->mu);
    if (q->tail == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 16;
        q->items = realloc(q->items, q->cap * sizeof *q->items);
    }
    snprintf(q->items[q->tail++], MAX_TOKEN, "%s", tok);
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void* streamer_thread(void* arg) {
    struct token_queue* q = arg;
    char tok[MAX_TOKEN];
    while (atomic_load(&q->status) == OV_GENAI_STREAMING_STATUS_RUNNING) {
        pthread_mutex_lock(&q->mu);
        while (q->head == q->tail && !q->closed) pthread_cond_wait(&q->cv, &q->mu);
        if (q->head == q->tail) {
            pthread_mutex_unlock(&q->mu);
            break;
        }
        memcpy(tok, q->items[q->head++], MAX_TOKEN);
        pthread_mutex_unlock(&q->mu);
        q->run->written++;
        atomic_store(&q->status, streamer_write(q->run->streamer, tok));
    }
    return NULL;
}

static int run_batching(struct run* r) {
    struct token_queue q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .run = r};
    atomic_init(&q.status, OV_GENAI_STREAMING_STATUS_RUNNING);
    pthread_t worker;
    if (r->streamer && pthread_create(&worker, NULL, streamer_thread, &q) != 0) return 0;
    char tok[MAX_TOKEN];
    for (size_t i = 0; i < r->length; i++) {
        if (i > 0 && r->delay_us > 0) usleep((useconds_t)r->delay_us);
        run_token(r, tok);
        run_append(r, tok);
        if (!r->streamer) continue;
        if (atomic_load(&q.status) != OV_GENAI_STREAMING_STATUS_RUNNING) {
            r->stopped = 1; /* this token was generated; it is never streamed */
            break;
        }
        queue_push(&q, tok);
    }
    if (r->streamer) {
        pthread_mutex_lock(&q.mu);
        q.closed = 1;
        pthread_cond_signal(&q.cv);
        pthread_mutex_unlock(&q.mu);
        pthread_join(worker, NULL);
        if (atomic_load(&q.status) != OV_GENAI_STREAMING_STATUS_RUNNING) r->stopped = 1;
        streamer_end(r->streamer);
    }
    free(q.items);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    return 1;
}

static ov_status_e generate_text(ov_genai_llm_pipeline* pipe, const char* input, int is_history, int think,
                                 const char* script, const char* prefix, const ov_genai_generation_config* config,
                                 const streamer_callback* streamer, ov_genai_decoded_results** results) {
    if (!pipe || !input || (!streamer && !results) || (streamer && !streamer->callback_func)) return INVALID_C_PARAM;
    atomic_fetch_add(&generate_calls, 1);
    if (atomic_exchange(&pipe->busy, 1)) {
        fprintf(stderr, "ovtest: concurrent generate on one pipeline\n");
        abort(); /* the real pipeline corrupts its state; make it loud */
    }
    ov_status_e status = OK;
    double start = now_ms();
    size_t input_tokens = count_tokens(pipe, input);
    ov_genai_generation_config* defaults = NULL;
    if (!config) {
        ov_genai_llm_pipeline_get_generation_config(pipe, &defaults);
        config = defaults;
    }
    /* GenerationConfig::get_max_new_tokens (generation_config.cpp):
     * max_new_tokens when set, else max_length less the prompt, which must
     * be shorter (an assertion: the generate throws). */
    size_t max_new = config->max_new_tokens != SIZE_MAX ? config->max_new_tokens
                     : config->max_length == SIZE_MAX  ? SIZE_MAX
                     : config->max_length > input_tokens ? config->max_length - input_tokens
                                                          : 0;
    if (strstr(input, "OVTEST_FAIL") || (is_npu(pipe->device) && input_tokens > pipe->max_prompt_len) ||
        !config_valid(config) ||
        max_new == 0) {
        status = UNKNOW_EXCEPTION;
        goto out;
    }
    /* Prefill. On the NPU, GenAI prefills the whole history every time and
     * counts it all (npu_prefill models what that costs). GenAI's stateful
     * pipeline on CPU/GPU keeps the KV cache of the history it last ran: a
     * history that continues it (every earlier message equal, more
     * messages) prefills only the new part and counts only that
     * (pipeline_stateful.cpp: is_history_continuation, align_cache_and_history);
     * any other input resets the cache. Continuous batching counts the
     * whole prompt. */
    size_t prefilled = input_tokens;
    if (is_npu(pipe->device)) {
        spend(npu_prefill_cost(pipe, input, input_tokens));
    } else if (pipe->stateful) {
        size_t held = pipe->cached_history ? strlen(pipe->cached_history) : 0;
        if (is_history && held && strncmp(input, pipe->cached_history, held) == 0 && input[held]) {
            /* The answer generated last time is in the cache as well: the
             * client's copy of it is not prefilled again. */
            size_t cached = count_tokens(pipe, pipe->cached_history) + pipe->cached_answer;
            prefilled = input_tokens > cached ? input_tokens - cached : 1;
        }
        free(pipe->cached_history);
        pipe->cached_history = is_history ? strdup(input) : NULL;
    }
    atomic_store(&last_prefilled, (int)prefilled);
    const char* prefill_cost = getenv("OVTEST_PREFILL_US_PER_TOKEN");
    if (prefill_cost && !is_npu(pipe->device)) usleep((useconds_t)(strtoul(prefill_cost, NULL, 10) * prefilled));
    if (strstr(input, "OVTEST_HANG_PREFILL")) hang_forever(); /* prefill has no callback to cancel from */
    const char* delay = getenv("OVTEST_TOKEN_DELAY_US");
    uint64_t seed = fnv1a(input, 1469598103934665603ULL) ^ (uint64_t)config->rng_seed;
    size_t natural = script ? (strlen(script) + 2) / 3 : 16 + (size_t)(seed % 17);
    if (prefix) natural += (strlen(prefix) + 2) / 3;
    struct text_streamer ts = {.cb = streamer, .caller = pthread_self(), .fault = fault_in(input)};
    struct run r = {
        .pipe = pipe,
        .streamer = streamer ? &ts : NULL,
        .tokens = {.seed = seed},
        .thoughts = {.seed = seed ^ 0x5bd1e995ULL},
        .think = think ? THINK_TOKENS : 0,
        .script = script,
        .prefix = prefix,
        .length = natural + (think ? THINK_TOKENS : 0) < max_new ? natural + (think ? THINK_TOKENS : 0) : max_new,
        .delay_us = delay ? atol(delay) : 0,
    };
    if (pipe->vocab) {
        /* The same answer in the folder's tokens: more of them, shorter. */
        size_t words = natural + (think ? THINK_TOKENS : 0);
        r.pieces = bpe_pieces(pipe->vocab, r, words, &r.npieces);
        if (r.pieces) r.length = r.npieces < max_new ? r.npieces : max_new;
    }
    if (!delay && is_npu(pipe->device)) /* the NPU's decode, scaled */
        r.delay_us = (long)(knob("OVTEST_NPU_DECODE_MS", 77) * 1000.0 * knob("OVTEST_NPU_TIME_SCALE", 0));
    if (is_npu(pipe->device)) {
        /* The NPU's KV cache holds MAX_PROMPT_LEN + MIN_RESPONSE_LEN - 1
         * tokens (utils.cpp: get_npu_kv_cache_capacity); when it is full the
         * generation ends quietly, with OK. */
        size_t capacity = pipe->max_prompt_len + pipe->min_response_len - 1;
        size_t room = capacity > input_tokens ? capacity - input_tokens : 0;
        if (r.length > room) r.length = room;
        run_stateful(&r);
    } else if (pipe->stateful) {
        run_stateful(&r); /* lm_encoding.cpp streams on the caller's thread, whatever the device */
        if (is_history) pipe->cached_answer = r.generated;
    } else if (!run_batching(&r)) {
        status = UNKNOW_EXCEPTION;
        streamer_free(&ts);
        free(r.answer);
        free(r.pieces);
        goto out;
    }
    atomic_store(&last_foreign, atomic_load(&ts.foreign));
    atomic_store(&last_after_stop, ts.after_stop);
    atomic_store(&last_generated, (int)r.generated);
    atomic_store(&last_written, (int)r.written);
    streamer_free(&ts);
    if (results) {
        *results = calloc(1, sizeof(ov_genai_decoded_results));
        (*results)->text = r.answer ? r.answer : strdup("");
        r.answer = NULL;
        struct ov_genai_perf_metrics_opaque* m = &(*results)->metrics;
        double end = now_ms();
        m->load_ms = pipe->load_ms;
        m->input_tokens = prefilled;
        m->generated_tokens = r.generated;
        /* GenAI answers -1 for a statistic with no samples. */
        m->ttft_ms = r.first_token_ms ? (float)(r.first_token_ms - start) : -1;
        m->tpot_ms = r.generated > 1 ? (float)((end - r.first_token_ms) / (double)(r.generated - 1)) : -1;
        m->generate_ms = (float)(end - start);
        ovtest_object_created();
    }
    free(r.answer);
    free(r.pieces);
out:
    ov_genai_generation_config_free(defaults);
    atomic_store(&pipe->busy, 0);
    return status;
}

static double npu_prefill_cost(ov_genai_llm_pipeline* pipe, const char* input, size_t n) {
    double us = npu_prefill(&pipe->npu, pipe->vocab, input, n);
    atomic_store(&last_prefill_us, (long long)us);
    return us;
}

/* latch applies the stateful pipeline's rule: within a chat the input type
 * may not change. */
static int latch(ov_genai_llm_pipeline* pipe, enum input_kind kind) {
    if (!is_npu(pipe->device) && !pipe->stateful) return 1;
    if (pipe->chat_input != INPUT_NONE && pipe->chat_input != kind) return 0;
    if (pipe->chat_input != INPUT_NONE || kind == INPUT_HISTORY) pipe->chat_input = kind;
    return 1;
}

ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs,
                                           const ov_genai_generation_config* config, const streamer_callback* streamer,
                                           ov_genai_decoded_results** results) {
    if (pipe && !latch(pipe, INPUT_STRING)) return UNKNOW_EXCEPTION; /* "switching between input types" */
    if (pipe && pipe->passthrough && inputs) {
        /* The prompt is whole: a thinking model thinks unless the prompt
         * closed an empty think block for it (Qwen3's enable_thinking false),
         * and calls a tool the prompt declares. */
        /* Its turn is the text after the last "<|im_start|>assistant\n"
         * (Qwen's markers; the whole prompt for other families): closed
         * with an empty think block there, it does not think, also when
         * the turn goes on (an assistant's prefill). */
        const char* opener = "<|im_start|>assistant\n";
        long at = last_of(inputs, opener);
        const char* turn = at >= 0 ? inputs + at + strlen(opener) : inputs;
        const char* closed = "<think>\n\n</think>\n\n";
        size_t n = strlen(turn);
        int think = pipe->thinks && strncmp(turn, closed, strlen(closed)) != 0 &&
                    !(n >= 10 && strcmp(turn + n - 10, "</think>\n\n") == 0);
        char* call = prompt_tool_call(pipe, inputs);
        ov_status_e st = generate_text(pipe, inputs, 0, think, call, NULL, config, streamer, results);
        free(call);
        return st;
    }
    /* A string is templated too (apply_chat_template defaults to true), with
     * the template's default: a thinking model thinks. */
    return generate_text(pipe, inputs, 0, pipe && pipe->thinks, NULL, NULL, config, streamer, results);
}

ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline* pipe) {
    if (!pipe) return INVALID_C_PARAM;
    pipe->chat_input = INPUT_STRING;
    return OK;
}

ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline* pipe) {
    if (!pipe) return INVALID_C_PARAM;
    pipe->chat_input = INPUT_NONE;
    free(pipe->cached_history); /* finish_chat resets the KV cache */
    pipe->cached_history = NULL;
    return OK;
}

/* json_string_after copies the JSON string that follows key in s (its
 * raw, still escaped text), or returns NULL. */
static char* json_string_after(const char* s, const char* key) {
    const char* at = strstr(s, key);
    if (!at) return NULL;
    at += strlen(key);
    const char* end = at;
    while (*end && *end != '"') end += *end == '\\' && end[1] ? 2 : 1;
    if (!*end) return NULL;
    size_t n = (size_t)(end - at);
    char* out = malloc(n + 1); /* no strndup on Windows */
    memcpy(out, at, n);
    out[n] = 0;
    return out;
}

/* system_tools is the first message's "tools" when it is a system message
 * carrying them (a JSON string, unescaped here), or NULL. */
static int first_is_system(const char* text) {
    const char* nl = strchr(text, '\n');
    const char* role = strstr(text, "\"role\":\"system\"");
    return role && (!nl || role < nl);
}

static char* system_tools(const char* text) {
    const char* nl = strchr(text, '\n');
    if (!first_is_system(text)) return NULL;
    const char* at = strstr(text, "\"tools\":\"");
    if (!at || (nl && at > nl)) return NULL;
    char* raw = json_string_after(at, "\"tools\":\"");
    if (!raw) return NULL;
    char* out = raw;
    for (char *r = raw, *w = raw; ; r++) {
        if (*r == '\\' && r[1]) r++;
        if (!(*w++ = *r)) break;
    }
    return out;
}

/* tool_call_for is the test model's answer when its template rendered
 * tools and the conversation does not end with a tool's result: a call of
 * the first tool, with its first required argument, written as the
 * model's family writes it after GenAI's detokenizer dropped the special
 * tokens ([TOOL_CALLS], <|python_tag|>, <|tool_call|>). NULL: no call.
 * Phi-4-mini's template reads its tools from the system message's "tools"
 * (a JSON string), not from the tools variable: it calls only when they
 * are there. */
static char* tool_call_for(const ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const char* text) {
    if (pipe->tool_format == TOOLS_NONE) return NULL;
    const char* last = text;
    for (const char* nl = strchr(last, '\n'); nl && nl[1]; nl = strchr(last, '\n')) last = nl + 1;
    if (strstr(last, "\"role\":\"tool\"")) return NULL; /* it answers with the result */
    char* phi4 = pipe->tool_format == TOOLS_PHI4 ? system_tools(text) : NULL;
    const char* tools = pipe->tool_format == TOOLS_PHI4 ? phi4 : history->tools;
    if (!tools) return NULL;
    char* name = json_string_after(tools, "\"name\":\"");
    char* required = json_string_after(tools, "\"required\":[\"");
    free(phi4);
    if (!name) {
        free(required);
        return NULL;
    }

    char args[512];
    if (required) snprintf(args, sizeof args, "{\"%s\": \"ovtest\"}", required);
    else snprintf(args, sizeof args, "{}");
    char* out = malloc(strlen(name) + strlen(args) + 64);
    switch (pipe->tool_format) {
    case TOOLS_HERMES:
        sprintf(out, "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", name, args);
        break;
    case TOOLS_LLAMA3:
        sprintf(out, "{\"name\": \"%s\", \"parameters\": %s}", name, args);
        break;
    default: /* Mistral, Phi-4-mini: a list */
        sprintf(out, "[{\"name\": \"%s\", \"arguments\": %s}]", name, args);
        break;
    }
    free(name);
    free(required);
    return out;
}

/* polyfill_tools is the history as GenAI's minja renders it
 * (src/cpp/src/tokenizer/tokenizer_impl.cpp apply_chat_template, minja's
 * chat_template::apply): given tools (set_tools) and a template that does
 * not render the tools variable (minja's probe: no tools, or Phi-4-mini's,
 * which reads them from the system message), minja's tool polyfill writes
 * them into the first system message's content, rebuilding that message
 * as role and content only (add_system): any other field it had, such as
 * Phi-4-mini's "tools", is gone. */
static char* polyfill_tools(const ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history) {
    if (!history->tools || (pipe->tool_format != TOOLS_NONE && pipe->tool_format != TOOLS_PHI4))
        return strdup(history->text);
    const char* text = history->text;
    const char* rest = text;
    char* content = NULL;
    if (first_is_system(text)) {
        const char* nl = strchr(text, '\n');
        char line[65536];
        snprintf(line, sizeof line, "%.*s", nl ? (int)(nl - text) : (int)strlen(text), text);
        content = json_string_after(line, "\"content\":\"");
        rest = nl ? nl + 1 : text + strlen(text);
    }
    const char* intro = "You can call any of the following tools to satisfy the user's requests: ";
    size_t n = strlen(rest) + strlen(history->tools) * 2 + (content ? strlen(content) : 0) + 256;
    char* out = malloc(n);
    int w = snprintf(out, n, "{\"role\":\"system\",\"content\":\"%s%s%s", content ? content : "", content ? "\\n\\n" : "", intro);
    for (const char* t = history->tools; *t && (size_t)w < n - 8; t++) { /* the tools, as a JSON string */
        if (*t == '"' || *t == '\\') out[w++] = '\\';
        out[w++] = *t;
    }
    w += snprintf(out + w, n - (size_t)w, "\"}\n%s", rest);
    free(content);
    return out;
}

/* generate_history runs a chat history through the test model, for the
 * LLM and the VLM pipelines alike: both assert a non-empty history and a
 * chat template; the template's enable_thinking switch, a tool call when
 * it renders tools, and what a VLM saw (seen, or NULL) come first. */
static ov_status_e generate_history(ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const char* seen,
                                    const ov_genai_generation_config* config, const streamer_callback* streamer,
                                    ov_genai_decoded_results** results) {
    if (!history->text[0]) return UNKNOW_EXCEPTION;          /* "Chat history cannot be empty" */
    if (!pipe->has_chat_template) return UNKNOW_EXCEPTION;   /* the chat template must not be empty */
    int think = pipe->thinks && !(history->extra && strstr(history->extra, "\"enable_thinking\":false"));
    char* text = polyfill_tools(pipe, history);
    char* call = tool_call_for(pipe, history, text);
    ov_status_e st = generate_text(pipe, text, 1, think, call, seen, config, streamer, results);
    free(call);
    free(text);
    return st;
}

ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe,
                                                        const ov_genai_chat_history* history,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_decoded_results** results) {
    if (!pipe || !history) return INVALID_C_PARAM;
    /* The chat mode is set before the checks, so a failed call latches too. */
    if (!latch(pipe, INPUT_HISTORY)) return UNKNOW_EXCEPTION;
    return generate_history(pipe, history, NULL, config, streamer, results);
}

void ov_genai_decoded_results_free(ov_genai_decoded_results* results) {
    if (!results) return;
    free(results->text);
    memset(results, 0xdd, sizeof *results);
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

/* OVTEST_WITHOUT_GET_STRING builds a library from before this function
 * (GenAI 2025.x): npud must name the missing symbol and refuse it. */
#ifndef OVTEST_WITHOUT_GET_STRING
ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results, char* output,
                                                size_t* output_size) {
    if (!results || !output_size) return INVALID_C_PARAM;
    size_t need = strlen(results->text) + 1;
    if (output) {
        if (*output_size < need) return OUT_OF_BOUNDS;
        memcpy(output, results->text, need);
    }
    *output_size = need;
    return OK;
}
#endif

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
        /* no samples: mean and std both -1 (calc_mean_and_std, perf_metrics.cpp) */             \
        *std = m->field < 0 ? -1 : 0;                                                             \
        return OK;                                                                                \
    }

MEAN_STD(ttft, ttft_ms)
MEAN_STD(tpot, tpot_ms)
MEAN_STD(generate_duration, generate_ms)

/* ---- VLM pipeline (openvino/genai/c/vlm_pipeline.h) ----
 * A vision-language model: the test model's language part, plus what it
 * "sees": each image's size and mean colour, said first. GenAI reads every
 * tensor as u8 whatever its element type (src/c/src/vlm_pipeline.cpp),
 * wraps its memory without copying it, and its image encoders take
 * [H, W, 3] or [N, H, W, 3]; other shapes throw. */

struct ov_genai_vlm_pipeline_opaque {
    ov_genai_llm_pipeline* llm;
};

struct ov_genai_vlm_decoded_results_opaque {
    ov_genai_decoded_results* inner;
};

ov_status_e ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_vlm_pipeline** pipe, ...) {
    if (!models_path || !device || !pipe) return INVALID_C_PARAM;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/openvino_vision_embeddings_model.xml", models_path);
    if (stat(path, &st) != 0) return UNKNOW_EXCEPTION; /* no vision encoder: not a VLM */
    ov_genai_llm_pipeline* llm = NULL;
    va_list ap;
    va_start(ap, pipe);
    ov_status_e status = pipeline_create(models_path, "openvino_language_model.xml", device, property_args_size, &llm, ap);
    va_end(ap);
    if (status != OK) return status;
    *pipe = calloc(1, sizeof(ov_genai_vlm_pipeline));
    (*pipe)->llm = llm;
    ovtest_object_created();
    return OK;
}

void ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe) {
    if (!pipe) return;
    ov_genai_llm_pipeline_free(pipe->llm);
    memset(pipe, 0xdd, sizeof *pipe);
    free(pipe);
    ovtest_object_freed();
}

static atomic_int images_encoded;

int ovtest_images_encoded(void) { return atomic_load(&images_encoded); }

/* describe_images is what the model says it saw, or sets *bad for a
 * tensor GenAI's encoders refuse. */
static char* describe_images(const ov_tensor_t** rgbs, size_t n, int* bad) {
    size_t cap = 64 + n * 64;
    char* out = calloc(1, cap);
    *bad = 0;
    if (n > 0 && !rgbs) {
        *bad = 1;
        return out;
    }
    for (size_t i = 0; i < n; i++) {
        ov_shape_t shape = {0, NULL};
        void* data = NULL;
        if (!rgbs[i] || ov_tensor_get_shape(rgbs[i], &shape) != OK || ov_tensor_data(rgbs[i], &data) != OK || !data) {
            *bad = 1;
            ov_shape_free(&shape);
            break;
        }
        int64_t* d = shape.dims;
        int ok = (shape.rank == 3 && d[2] == 3) || (shape.rank == 4 && d[0] == 1 && d[3] == 3);
        int64_t h = shape.rank == 4 ? d[1] : d[0], w = shape.rank == 4 ? d[2] : d[1];
        ov_shape_free(&shape);
        if (!ok || h <= 0 || w <= 0) {
            *bad = 1;
            break;
        }
        const unsigned char* px = data;
        unsigned long long sum[3] = {0, 0, 0};
        for (int64_t p = 0; p < h * w; p++)
            for (int c = 0; c < 3; c++) sum[c] += px[p * 3 + c];
        unsigned long long count = (unsigned long long)(h * w);
        snprintf(out + strlen(out), cap - strlen(out), "%s%lldx%lld #%02llx%02llx%02llx", i ? ", " : "I see ",
                 (long long)w, (long long)h, (sum[0] + count / 2) / count, (sum[1] + count / 2) / count,
                 (sum[2] + count / 2) / count);
    }
    if (n > 0 && !*bad) snprintf(out + strlen(out), cap - strlen(out), ". ");
    return out;
}

static ov_status_e vlm_generate(ov_genai_vlm_pipeline* pipe, const char* text, const ov_genai_chat_history* history,
                                const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config,
                                const streamer_callback* streamer, ov_genai_vlm_decoded_results** results) {
    if (!pipe || (!text && !history) || (!streamer && !results)) return INVALID_C_PARAM;
    int bad = 0;
    char* seen = describe_images(rgbs, num_images, &bad);
    if (bad) {
        free(seen);
        return num_images > 0 && !rgbs ? INVALID_C_PARAM : UNKNOW_EXCEPTION;
    }
    ov_genai_decoded_results* inner = NULL;
    ov_status_e status;
    atomic_fetch_add(&images_encoded, (int)num_images); /* the images passed are encoded */
    if (history) {
        /* The images passed join what this history's state encoded before
         * (vlm_chat_context.cpp: encode_visions_if_needed); the model sees
         * them all. */
        ov_genai_chat_history* h = (ov_genai_chat_history*)history; /* GenAI's state is mutable too */
        if (seen[0]) {
            size_t have = h->seen ? strlen(h->seen) : 0;
            h->seen = realloc(h->seen, have + strlen(seen) + 1);
            strcpy(h->seen + have, seen);
        }
        status = generate_history(pipe->llm, history, h->seen, config, streamer, results ? &inner : NULL);
    } else {
        status = generate_text(pipe->llm, text, 0, pipe->llm->thinks, NULL, seen[0] ? seen : NULL, config, streamer,
                               results ? &inner : NULL);
    }
    free(seen);
    if (status == OK && results) {
        *results = calloc(1, sizeof(ov_genai_vlm_decoded_results));
        (*results)->inner = inner;
    }
    return status;
}

ov_status_e ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs,
                                           const ov_tensor_t** rgbs, size_t num_images,
                                           const ov_genai_generation_config* config, const streamer_callback* streamer,
                                           ov_genai_vlm_decoded_results** results) {
    if (!text_inputs) return INVALID_C_PARAM;
    return vlm_generate(pipe, text_inputs, NULL, rgbs, num_images, config, streamer, results);
}

ov_status_e ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe, const ov_genai_chat_history* history,
                                                        const ov_tensor_t** rgbs, size_t num_images,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_vlm_decoded_results** results) {
    if (!history) return INVALID_C_PARAM;
    return vlm_generate(pipe, NULL, history, rgbs, num_images, config, streamer, results);
}

ov_status_e ov_genai_vlm_pipeline_start_chat(ov_genai_vlm_pipeline* pipe) {
    return pipe ? ov_genai_llm_pipeline_start_chat(pipe->llm) : INVALID_C_PARAM;
}

ov_status_e ov_genai_vlm_pipeline_finish_chat(ov_genai_vlm_pipeline* pipe) {
    return pipe ? ov_genai_llm_pipeline_finish_chat(pipe->llm) : INVALID_C_PARAM;
}

ov_status_e ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe,
                                                        ov_genai_generation_config** config) {
    return pipe ? ov_genai_llm_pipeline_get_generation_config(pipe->llm, config) : INVALID_C_PARAM;
}

ov_status_e ov_genai_vlm_pipeline_set_generation_config(ov_genai_vlm_pipeline* pipe, ov_genai_generation_config* config) {
    return pipe && config ? OK : INVALID_C_PARAM;
}

ov_status_e ov_genai_vlm_decoded_results_create(ov_genai_vlm_decoded_results** results) {
    if (!results) return INVALID_C_PARAM;
    *results = calloc(1, sizeof(ov_genai_vlm_decoded_results));
    return OK;
}

void ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results) {
    if (!results) return;
    ov_genai_decoded_results_free(results->inner);
    memset(results, 0xdd, sizeof *results);
    free(results);
}

ov_status_e ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results,
                                                          ov_genai_perf_metrics** metrics) {
    if (!results || !results->inner) return INVALID_C_PARAM;
    return ov_genai_decoded_results_get_perf_metrics(results->inner, metrics);
}

void ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) {
    ov_genai_decoded_results_perf_metrics_free(metrics);
}

ov_status_e ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output,
                                                    size_t* output_size) {
    if (!results || !results->inner) return INVALID_C_PARAM;
#ifdef OVTEST_WITHOUT_GET_STRING
    (void)output;
    (void)output_size;
    return UNKNOW_EXCEPTION;
#else
    return ov_genai_decoded_results_get_string(results->inner, output, output_size);
#endif
}
