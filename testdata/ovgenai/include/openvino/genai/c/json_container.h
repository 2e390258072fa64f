/* npud's test stand-in for GenAI's json_container.h (subset; from the facts sheet). */
#ifndef NPUD_TEST_GENAI_JSON_CONTAINER_H
#define NPUD_TEST_GENAI_JSON_CONTAINER_H

typedef enum {
    OV_GENAI_JSON_CONTAINER_OK = 0,
    OV_GENAI_JSON_CONTAINER_INVALID_PARAM = -1,
    OV_GENAI_JSON_CONTAINER_INVALID_JSON = -2,
    OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS = -3,
    OV_GENAI_JSON_CONTAINER_ERROR = -4
} ov_genai_json_container_status_e;

typedef struct ov_genai_json_container_opaque ov_genai_json_container;

ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container** container,
                                                                                 const char* json);
void ov_genai_json_container_free(ov_genai_json_container* container);

#endif
