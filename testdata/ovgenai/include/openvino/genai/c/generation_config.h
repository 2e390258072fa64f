/* npud's test stand-in for GenAI's generation_config.h (subset; from the facts sheet). */
#ifndef NPUD_TEST_GENAI_GENERATION_CONFIG_H
#define NPUD_TEST_GENAI_GENERATION_CONFIG_H

#include "openvino/c/openvino.h"

typedef struct ov_genai_generation_config_opaque ov_genai_generation_config;

ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config);
void ov_genai_generation_config_free(ov_genai_generation_config* config);
ov_status_e ov_genai_generation_config_set_max_new_tokens(ov_genai_generation_config* config, const size_t value);
ov_status_e ov_genai_generation_config_set_do_sample(ov_genai_generation_config* config, const bool value);
ov_status_e ov_genai_generation_config_set_temperature(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_top_p(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_top_k(ov_genai_generation_config* config, const size_t value);
ov_status_e ov_genai_generation_config_set_min_p(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_repetition_penalty(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_presence_penalty(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_frequency_penalty(ov_genai_generation_config* config, const float value);
ov_status_e ov_genai_generation_config_set_rng_seed(ov_genai_generation_config* config, const size_t value);
ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings,
                                                       const size_t count);
ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* value);

#endif
