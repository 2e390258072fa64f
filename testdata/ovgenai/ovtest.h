/* Test-only hooks of npud's OpenVINO GenAI test library. */
#ifndef NPUD_OVTEST_H
#define NPUD_OVTEST_H

#include <stddef.h>
#include <stdint.h>

/* The test model's tokenizer: its tokens are the text's words (runs of
 * anything but space, tab and newline). It writes up to cap ids and returns
 * how many tokens the text has. Both the test GenAI (a prompt's
 * num_input_tokens) and the test core's tokenizer IR (a model folder's
 * openvino_tokenizer.xml run through the core C API) count with it, so npud's
 * count and the test GenAI's always agree. Defined in ovcore_test.c. */
size_t ovtest_tokenize(const char* text, int64_t* ids, size_t cap);

/* The test core's tokenizer inferences running now, and those a cancel
 * ended since the library loaded. */
int ovtest_tokenizer_running(void);
int ovtest_tokenizer_cancelled(void);

/* The test core's embedding model: each token's hidden state is
 * OVTEST_EMBED_WIDTH values of its id (npu/openvino's test of it computes
 * the same). */
#define OVTEST_EMBED_WIDTH 4
static inline float ovtest_hidden(int64_t id, int k) { return (float)((id * (2 * k + 3)) % 101) / 101.0f - 0.5f; }

/* Objects created and not yet freed (pipelines, configs, results, metrics,
 * histories, JSON containers, core objects, device lists, strings). */
int64_t ovtest_live_objects(void);
/* 1 when the last generate ran its callbacks on a thread of its own. */
int ovtest_last_callbacks_foreign(void);
/* Callback calls of the last generate after one answered STOP or CANCEL
 * (the final flush, when text was held back). */
int ovtest_last_calls_after_stop(void);
/* Tokens the last generate produced, streamed or not. */
int ovtest_last_generated(void);
/* Tokens the last generate gave its TextStreamer: up to and including the
 * one whose callback answered STOP or CANCEL. */
int ovtest_last_written(void);
/* Prompt tokens the last generate counted as input (num_input_tokens): on
 * the NPU the whole history; on CPU/GPU's stateful pipeline only the new
 * part of a history that continues the cached one. */
int ovtest_last_prefilled(void);
/* Generates run since the library loaded (every pipeline, failed ones too). */
int ovtest_generate_calls(void);
/* Images the VLM pipelines encoded since the library loaded. */
int ovtest_images_encoded(void);
/* The NPU cost model's figures for the last generate: the modelled prefill
 * (microseconds, before OVTEST_NPU_TIME_SCALE), the tokens restored from
 * NPUW's prefix cache, and the prefill chunks computed (1 for a static
 * prefill). */
int64_t ovtest_last_prefill_us(void);
int ovtest_last_restored(void);
int ovtest_last_chunks(void);
/* The last NPU compile: modelled microseconds, and 1 when CACHE_DIR held its
 * blob. */
int64_t ovtest_last_compile_us(void);
int ovtest_last_compile_cached(void);

/* Whisper generates run since the library loaded, and the length of the
 * last one's initial prompt (-1: none). */
int ovtest_whisper_generates(void);
int64_t ovtest_last_whisper_prompt_bytes(void);

/* GenAI's tokenizer's start (tokenizers_relative_to_genai,
 * src/cpp/src/tokenizer/tokenizers_path.cpp; core_with_extension,
 * tokenizer_impl.cpp): the openvino-tokenizers library named by
 * OPENVINO_TOKENIZERS_PATH_GENAI, else the one beside this library's real
 * file, loaded as an OpenVINO extension. 1 when it loads; every pipeline
 * fails to start without it, as GenAI's do. */
int ovtest_tokenizers_load(void);

#endif
