/* Test-only hooks of npud's OpenVINO GenAI test library. */
#ifndef NPUD_OVTEST_H
#define NPUD_OVTEST_H

#include <stddef.h>
#include <stdint.h>

/* A model folder's tokenizer, as the test library tokenizes with it: the
 * byte-level BPE of the folder's tokenizer.json when it is one (a BPE model
 * with GPT-2's ByteLevel pre-tokenizer and no normalizer, as the project's
 * tiny model has: ovbpe_test.c), else NULL, and the test model's tokens are
 * its words (runs of anything but space, tab and newline). Immutable once
 * open and shared by reference count (ovtest_vocab_ref; ovtest_vocab_free
 * drops a reference), so any thread may tokenize with it. */
typedef struct ovtest_vocab ovtest_vocab;

/* ovtest_vocab_open reads dir/tokenizer.json (a symlink is followed). It
 * returns 0 with *vocab NULL when there is none or it is another kind of
 * tokenizer, 0 with a vocabulary, or -1 with a message in err when the file
 * is too large or not valid JSON. */
int ovtest_vocab_open(const char* dir, ovtest_vocab** vocab, char* err, size_t errlen);
ovtest_vocab* ovtest_vocab_ref(ovtest_vocab* vocab);
void ovtest_vocab_free(ovtest_vocab* vocab);

/* ovtest_tokenize writes up to cap of the text's ids and returns how many
 * tokens it has (never more than its bytes). Both the test GenAI (a
 * prompt's num_input_tokens) and the test core's tokenizer IR (a model
 * folder's openvino_tokenizer.xml run through the core C API, with the
 * tokenizer.json beside it) count with it, so npud's count and the test
 * GenAI's always agree, and for the tiny model they are the real
 * tokenizer's. */
size_t ovtest_tokenize(const ovtest_vocab* vocab, const char* text, int64_t* ids, size_t cap);

/* ovtest_vocab_decode writes a token's bytes and a NUL to out when they
 * fit in cap and returns their length: 0 for a special token (GenAI's
 * detokenizer skips them: skip_special_tokens) or an unknown id. */
size_t ovtest_vocab_decode(const ovtest_vocab* vocab, int64_t id, char* out, size_t cap);

/* ovtest_json_sizes reads the top-level members named by keys of the JSON
 * object in path (1 MiB at most) that are non-negative integers into
 * values, leaving the others. 0 when the file is absent or was read, -1
 * when it is not valid JSON. */
int ovtest_json_sizes(const char* path, const char* const* keys, size_t* values, size_t n);

/* The test core's tokenizer inferences running now, and those a cancel
 * ended since the library loaded. */
int ovtest_tokenizer_running(void);
int ovtest_tokenizer_cancelled(void);

/* The test core's embedding model: each token's hidden state is
 * OVTEST_EMBED_WIDTH values of its id (npu/openvino's test of it computes
 * the same). */
#define OVTEST_EMBED_WIDTH 4
static inline float ovtest_hidden(int64_t id, int k) { return (float)((id * (2 * k + 3)) % 101) / 101.0f - 0.5f; }
/* The test core's cross-encoder (an IR naming logits): one logit a row,
 * the mean over the row's tokens with mask 1 of ovtest_logit_term, 0 for a
 * row of none (npu/openvino/ovtestlib computes the same). */
static inline double ovtest_logit_term(int64_t id, int64_t type) { return ovtest_hidden(id, 0) + 0.25 * (double)type; }

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
