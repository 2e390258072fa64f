/*
 * npud test stand-in for openvino/genai/c/vlm_pipeline.h.
 * Declares the same API as the official OpenVINO GenAI 2026.3 header of this
 * path (same includes, macros, types and signatures) so that code compiled
 * against it compiles against the real one. Behaviour: testdata/ovgenai.
 */
#pragma once

#include "chat_history.h"
#include "generation_config.h"
#include "perf_metrics.h"
#include "openvino/c/ov_common.h"
#include "openvino/c/ov_tensor.h"
#include "openvino/genai/c/visibility.h"

typedef struct ov_genai_vlm_decoded_results_opaque ov_genai_vlm_decoded_results;
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_decoded_results_create(ov_genai_vlm_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS void ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results, ov_genai_perf_metrics** metrics);
OPENVINO_GENAI_C_EXPORTS void ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output, size_t* output_size);

typedef struct ov_genai_vlm_pipeline_opaque ov_genai_vlm_pipeline;
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_vlm_pipeline** pipe, ...);
OPENVINO_GENAI_C_EXPORTS void ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe);

#ifndef OV_GENAI_STREAMING_STATUS_DEFINED
#define OV_GENAI_STREAMING_STATUS_DEFINED
typedef enum {
    OV_GENAI_STREAMING_STATUS_RUNNING = 0,
    OV_GENAI_STREAMING_STATUS_STOP = 1,
    OV_GENAI_STREAMING_STATUS_CANCEL = 2
} ov_genai_streaming_status_e;
#endif // OV_GENAI_STREAMING_STATUS_DEFINED

#ifndef OV_GENAI_STREAMER_CALLBACK_DEFINED
#define OV_GENAI_STREAMER_CALLBACK_DEFINED
typedef struct {
    ov_genai_streaming_status_e(OPENVINO_C_API_CALLBACK* callback_func)(const char* str, void* args);
    void* args;
} streamer_callback;
#endif // OV_GENAI_STREAMER_CALLBACK_DEFINED

OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe, const ov_genai_chat_history* history, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_start_chat(ov_genai_vlm_pipeline* pipe);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_finish_chat(ov_genai_vlm_pipeline* pipe);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe, ov_genai_generation_config** config);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_vlm_pipeline_set_generation_config(ov_genai_vlm_pipeline* pipe, ov_genai_generation_config* config);
