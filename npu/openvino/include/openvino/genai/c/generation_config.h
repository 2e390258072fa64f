/*
 * npud test stand-in for openvino/genai/c/generation_config.h.
 * Declares the same API as the official OpenVINO GenAI 2026.3 header of this
 * path (same includes, macros, types and signatures) so that code compiled
 * against it compiles against the real one. Behaviour: testdata/ovgenai.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "openvino/c/ov_common.h"
#include "openvino/genai/c/visibility.h"
typedef enum {
    EARLY,
    HEURISTIC,
    NEVER
} StopCriteria;
typedef struct ov_genai_generation_config_opaque ov_genai_generation_config;
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_create_from_json(const char* json_path, ov_genai_generation_config** config);
OPENVINO_GENAI_C_EXPORTS void ov_genai_generation_config_free(ov_genai_generation_config* handle);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_new_tokens(ov_genai_generation_config* handle, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_length(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_ignore_eos(ov_genai_generation_config* config, const bool value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_min_new_tokens(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_echo(ov_genai_generation_config* config, const bool value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_logprobs(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings, const size_t count);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_include_stop_str_in_output(ov_genai_generation_config* config, const bool value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_token_ids(ov_genai_generation_config* config, const int64_t* token_ids, const size_t token_ids_num);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_beam_groups(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_beams(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_diversity_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_length_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_return_sequences(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_no_repeat_ngram_size(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_criteria(ov_genai_generation_config* config, const StopCriteria value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_temperature(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_top_p(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_top_k(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_min_p(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_do_sample(ov_genai_generation_config* config, const bool value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_repetition_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_presence_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_frequency_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_rng_seed(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_assistant_confidence_threshold(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_assistant_tokens(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_ngram_size(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_eos_token_id(ov_genai_generation_config* config, const int64_t id);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* max_new_tokens);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config* config);
