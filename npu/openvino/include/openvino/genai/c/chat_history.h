/*
 * npud test stand-in for openvino/genai/c/chat_history.h.
 * Declares the same API as the official OpenVINO GenAI 2026.3 header of this
 * path (same includes, macros, types and signatures) so that code compiled
 * against it compiles against the real one. Behaviour: testdata/ovgenai.
 */
#pragma once

#include "visibility.h"
#include <stddef.h>
typedef struct ov_genai_json_container_opaque ov_genai_json_container;
typedef struct ov_genai_chat_history_opaque ov_genai_chat_history;
typedef enum {
    OV_GENAI_CHAT_HISTORY_OK = 0,
    OV_GENAI_CHAT_HISTORY_INVALID_PARAM = -1,
    OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS = -2,
    OV_GENAI_CHAT_HISTORY_EMPTY = -3,
    OV_GENAI_CHAT_HISTORY_INVALID_JSON = -4,
    OV_GENAI_CHAT_HISTORY_ERROR = -5
} ov_genai_chat_history_status_e;
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(ov_genai_chat_history** history, const ov_genai_json_container* messages);
OPENVINO_GENAI_C_EXPORTS void ov_genai_chat_history_free(ov_genai_chat_history* history);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history, const ov_genai_json_container* message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history* history);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(const ov_genai_chat_history* history, ov_genai_json_container** messages);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_message(const ov_genai_chat_history* history, size_t index, ov_genai_json_container** message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_first(const ov_genai_chat_history* history, ov_genai_json_container** message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_last(const ov_genai_chat_history* history, ov_genai_json_container** message);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history* history);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_size(const ov_genai_chat_history* history, size_t* size);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_empty(const ov_genai_chat_history* history, int* empty);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history* history, const ov_genai_json_container* tools);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(const ov_genai_chat_history* history, ov_genai_json_container** tools);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history, const ov_genai_json_container* extra_context);
OPENVINO_GENAI_C_EXPORTS ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(const ov_genai_chat_history* history, ov_genai_json_container** extra_context);
