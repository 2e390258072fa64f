/*
 * npud test stand-in for openvino/genai/c/whisper_pipeline.h.
 * Declares the same API as the official OpenVINO GenAI 2026.3 header of this
 * path (same includes, macros, types and signatures) so that code compiled
 * against it compiles against the real one. Behaviour: testdata/ovgenai.
 */
#pragma once
#include "perf_metrics.h"
#include "whisper_generation_config.h"

typedef struct ov_genai_whisper_decoded_result_chunk_opaque ov_genai_whisper_decoded_result_chunk;
typedef struct ov_genai_whisper_decoded_results_opaque ov_genai_whisper_decoded_results;
typedef struct ov_genai_whisper_pipeline_opaque ov_genai_whisper_pipeline;
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_result_chunk_create(ov_genai_whisper_decoded_result_chunk** chunk);
OPENVINO_GENAI_C_EXPORTS void ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* start_ts);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* end_ts);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk, char* text, size_t* text_size);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_create(ov_genai_whisper_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS void ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_perf_metrics(const ov_genai_whisper_decoded_results* results, ov_genai_perf_metrics** metrics);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results, size_t* count);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index, char* text, size_t* text_size);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_score_at(const ov_genai_whisper_decoded_results* results, size_t index, float* score);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results, bool* has_chunks);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results, size_t* count);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results, size_t index, ov_genai_whisper_decoded_result_chunk** chunk);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_decoded_results_get_string(const ov_genai_whisper_decoded_results* results, char* output, size_t* output_size);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_whisper_pipeline** pipeline, ...);
OPENVINO_GENAI_C_EXPORTS void ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size, const ov_genai_whisper_generation_config* config, ov_genai_whisper_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config** config);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_whisper_pipeline_set_generation_config(ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config* config);
