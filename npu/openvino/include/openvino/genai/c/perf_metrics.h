/*
 * npud test stand-in for openvino/genai/c/perf_metrics.h.
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
typedef struct ov_genai_perf_metrics_opaque ov_genai_perf_metrics;
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics, float* load_time);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num_input_tokens);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_ttft(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_tpot(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_ipot(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_throughput(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_inference_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_generate_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_tokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_detokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_chat_template_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics* left, const ov_genai_perf_metrics* right);
