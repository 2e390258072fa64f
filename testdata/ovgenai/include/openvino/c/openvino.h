/*
 * npud's test stand-in for OpenVINO's core C API: only the declarations
 * npud uses, written from the project's facts sheet
 * (shared/reference/openvino-genai-c-api.md). Not OpenVINO's header.
 */
#ifndef NPUD_TEST_OPENVINO_C_H
#define NPUD_TEST_OPENVINO_C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    OK = 0,
    GENERAL_ERROR = -1,
    NOT_IMPLEMENTED = -2,
    NETWORK_NOT_LOADED = -3,
    PARAMETER_MISMATCH = -4,
    NOT_FOUND = -5,
    OUT_OF_BOUNDS = -6,
    UNEXPECTED = -7,
    REQUEST_BUSY = -8,
    RESULT_NOT_READY = -9,
    NOT_ALLOCATED = -10,
    INFER_NOT_STARTED = -11,
    NETWORK_NOT_READ = -12,
    INFER_CANCELLED = -13,
    INVALID_C_PARAM = -14,
    UNKNOWN_C_ERROR = -15,
    NOT_IMPLEMENT_C_METHOD = -16,
    UNKNOW_EXCEPTION = -17
} ov_status_e;

typedef struct ov_core ov_core_t;

typedef struct {
    char** devices;
    size_t size;
} ov_available_devices_t;

ov_status_e ov_core_create(ov_core_t** core);
void ov_core_free(ov_core_t* core);
ov_status_e ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices);
void ov_available_devices_free(ov_available_devices_t* devices);
ov_status_e ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key,
                                 char** property_value);
void ov_free(const char* content);
const char* ov_get_error_info(ov_status_e status);

#endif
