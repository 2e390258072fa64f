/* npud's test stand-in for GenAI's llm_pipeline.h (subset; from the facts sheet). */
#ifndef NPUD_TEST_GENAI_LLM_PIPELINE_H
#define NPUD_TEST_GENAI_LLM_PIPELINE_H

#include "openvino/c/openvino.h"
#include "openvino/genai/c/chat_history.h"
#include "openvino/genai/c/generation_config.h"
#include "openvino/genai/c/perf_metrics.h"

typedef struct ov_genai_llm_pipeline_opaque ov_genai_llm_pipeline;
typedef struct ov_genai_decoded_results_opaque ov_genai_decoded_results;

#ifndef OV_GENAI_STREAMING_STATUS_DEFINED
#define OV_GENAI_STREAMING_STATUS_DEFINED
typedef enum {
    OV_GENAI_STREAMING_STATUS_RUNNING = 0,
    OV_GENAI_STREAMING_STATUS_STOP = 1,
    OV_GENAI_STREAMING_STATUS_CANCEL = 2
} ov_genai_streaming_status_e;
#endif

#ifndef OV_GENAI_STREAMER_CALLBACK_DEFINED
#define OV_GENAI_STREAMER_CALLBACK_DEFINED
typedef struct {
    ov_genai_streaming_status_e (*callback_func)(const char* str, void* args);
    void* args;
} streamer_callback;
#endif

/* Variadic: property_args_size key/value strings follow. */
ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size,
                                         ov_genai_llm_pipeline** pipe, ...);
void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe);
ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs,
                                           const ov_genai_generation_config* config, const streamer_callback* streamer,
                                           ov_genai_decoded_results** results);
ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe,
                                                        const ov_genai_chat_history* history,
                                                        const ov_genai_generation_config* config,
                                                        const streamer_callback* streamer,
                                                        ov_genai_decoded_results** results);
ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe,
                                                        ov_genai_generation_config** config);
void ov_genai_decoded_results_free(ov_genai_decoded_results* results);
ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results,
                                                      ov_genai_perf_metrics** metrics);
void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);

#endif
