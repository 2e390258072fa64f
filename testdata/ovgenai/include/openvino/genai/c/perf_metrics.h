/* npud's test stand-in for GenAI's perf_metrics.h (subset; from the facts sheet). */
#ifndef NPUD_TEST_GENAI_PERF_METRICS_H
#define NPUD_TEST_GENAI_PERF_METRICS_H

#include "openvino/c/openvino.h"

typedef struct ov_genai_perf_metrics_opaque ov_genai_perf_metrics;

ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics, float* load_time);
ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num);
ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num);
ov_status_e ov_genai_perf_metrics_get_ttft(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_tpot(const ov_genai_perf_metrics* metrics, float* mean, float* std);
ov_status_e ov_genai_perf_metrics_get_generate_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);

#endif
