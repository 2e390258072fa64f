/* npud's test stand-in for GenAI's chat_history.h (subset; from the facts sheet). */
#ifndef NPUD_TEST_GENAI_CHAT_HISTORY_H
#define NPUD_TEST_GENAI_CHAT_HISTORY_H

#include "openvino/genai/c/json_container.h"

typedef enum {
    OV_GENAI_CHAT_HISTORY_OK = 0,
    OV_GENAI_CHAT_HISTORY_INVALID_PARAM = -1,
    OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS = -2,
    OV_GENAI_CHAT_HISTORY_EMPTY = -3,
    OV_GENAI_CHAT_HISTORY_INVALID_JSON = -4,
    OV_GENAI_CHAT_HISTORY_ERROR = -5
} ov_genai_chat_history_status_e;

typedef struct ov_genai_chat_history_opaque ov_genai_chat_history;

ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history);
void ov_genai_chat_history_free(ov_genai_chat_history* history);
ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history,
                                                               const ov_genai_json_container* message);

#endif
