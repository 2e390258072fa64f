/*
 * npud's test implementation of the OpenVINO core C API subset npud calls.
 * Devices come from the environment: OVTEST_DEVICES="CPU,GPU,NPU" (default
 * "CPU"); FULL_DEVICE_NAME is "Test <name> device", an NPU's
 * NPU_DRIVER_VERSION is OVTEST_NPU_DRIVER (default "1688"). The version is
 * OVTEST_VERSION (default a 2026.3 build number). OVTEST_CRASH_LISTING set
 * makes listing the devices crash (SIGSEGV), as a plugin's bad pointer
 * would; ov_core_add_extension loads a library that exports OpenVINO's
 * create_extensions, as the real core does (openvino-tokenizers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <dlfcn.h>
#include <signal.h>
#endif

#include <stdatomic.h>

#include "openvino/c/ov_core.h"
#include "ovtest.h"

/* Every object either test library hands out is counted here. */
static atomic_long live_objects;

void ovtest_object_created(void) { atomic_fetch_add(&live_objects, 1); }
void ovtest_object_freed(void) { atomic_fetch_sub(&live_objects, 1); }
int64_t ovtest_live_objects(void) { return atomic_load(&live_objects); }

/* The core keeps the message of the last exception its C API caught, per
 * thread: a success leaves it, ov_core_free clears it, and before any
 * failure there is none (NULL), as libopenvino_c 2026.4.1 does. */
static _Thread_local char last_err_msg[512];

const char* ov_get_last_err_msg(void) { return last_err_msg[0] ? last_err_msg : NULL; }

struct ov_core {
    int unused;
};

ov_status_e ov_core_create(ov_core_t** core) {
    if (!core) return INVALID_C_PARAM;
    *core = calloc(1, sizeof(ov_core_t));
    ovtest_object_created();
    return OK;
}

void ov_core_free(ov_core_t* core) {
    last_err_msg[0] = 0;
    if (!core) return;
    free(core);
    ovtest_object_freed();
}

const char* ovtest_devices(void) {
    const char* d = getenv("OVTEST_DEVICES");
    return d && *d ? d : "CPU";
}

ov_status_e ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices) {
    if (!core || !devices) return INVALID_C_PARAM;
#ifndef _WIN32
    if (getenv("OVTEST_CRASH_LISTING")) {
        raise(SIGSEGV);
        abort(); /* not reached */
    }
#endif
    char* list = strdup(ovtest_devices());
    size_t n = 1;
    for (char* p = list; *p; p++) n += *p == ',';
    devices->devices = calloc(n, sizeof(char*));
    devices->size = 0;
    for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) devices->devices[devices->size++] = strdup(tok);
    free(list);
    ovtest_object_created();
    return OK;
}

void ov_available_devices_free(ov_available_devices_t* devices) {
    if (!devices || !devices->devices) return;
    for (size_t i = 0; i < devices->size; i++) free(devices->devices[i]);
    free(devices->devices);
    devices->devices = NULL;
    devices->size = 0;
    ovtest_object_freed();
}

ov_status_e ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key,
                                 char** property_value) {
    if (!core || !device_name || !property_key || !property_value) return INVALID_C_PARAM;
    char buf[128];
    if (strcmp(property_key, "FULL_DEVICE_NAME") == 0) {
        snprintf(buf, sizeof buf, "Test %s device", device_name);
    } else if (strcmp(property_key, "NPU_DRIVER_VERSION") == 0 && strncmp(device_name, "NPU", 3) == 0) {
        const char* v = getenv("OVTEST_NPU_DRIVER");
        snprintf(buf, sizeof buf, "%s", v && *v ? v : "1688");
    } else {
        /* The plugin throws; the C API answers GENERAL_ERROR and keeps the
         * exception's text, the plugin's words on its last line. */
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nCannot get unsupported property: %s\n\n\n",
                 property_key);
        return GENERAL_ERROR;
    }
    *property_value = strdup(buf);
    ovtest_object_created();
    return OK;
}

ov_status_e ov_core_add_extension(const ov_core_t* core, const char* path) {
    if (!core || !path) return INVALID_C_PARAM;
#ifndef _WIN32
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nCannot load library '%s': %s\n", path,
                 dlerror());
        return GENERAL_ERROR;
    }
    if (!dlsym(h, "create_extensions")) {
        snprintf(last_err_msg, sizeof last_err_msg,
                 "Exception from ovcore_test.c:\nLibrary '%s' is not an OpenVINO extension: no create_extensions\n", path);
        dlclose(h);
        return GENERAL_ERROR;
    }
#endif
    return OK;
}

void ov_free(const char* content) {
    if (!content) return;
    free((void*)content);
    ovtest_object_freed();
}

/* Like the real one, the version's strings are the caller's to free with
 * ov_version_free. */
ov_status_e ov_get_openvino_version(ov_version_t* version) {
    if (!version) return INVALID_C_PARAM;
    const char* build = getenv("OVTEST_VERSION");
    version->buildNumber = strdup(build && *build ? build : "2026.3.0-20000-ovtest-releases/2026/3");
    version->description = strdup("OpenVINO Runtime");
    ovtest_object_created();
    return OK;
}

void ov_version_free(ov_version_t* version) {
    if (!version || !version->buildNumber) return;
    free((void*)version->buildNumber);
    free((void*)version->description);
    version->buildNumber = version->description = NULL;
    ovtest_object_freed();
}

/* OpenVINO's texts, indexed by -status; anything past the last (or a
 * positive status) is the last (src/bindings/c/src/ov_common.cpp). */
static const char* const error_infos[] = {"success",
                                          "general error",
                                          "it's not implement",
                                          "failed to network",
                                          "input parameter mismatch",
                                          "cannot find the value",
                                          "out of bounds",
                                          "run with unexpected error",
                                          "request is busy",
                                          "result is not ready",
                                          "it is not allocated",
                                          "inference start with error",
                                          "network is not ready",
                                          "inference is canceled",
                                          "invalid c input parameters",
                                          "unknown c error",
                                          "not implement in c method",
                                          "unknown exception"};

const char* ov_get_error_info(ov_status_e status) {
    size_t index = (size_t)(-(long long)status), last = sizeof error_infos / sizeof *error_infos - 1;
    return error_infos[index > last ? last : index];
}

/* ---- shapes and tensors (openvino/c/ov_shape.h, ov_tensor.h) ---- */

#include "openvino/c/ov_tensor.h"

ov_status_e ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape) {
    if (!shape || rank <= 0) return INVALID_C_PARAM;
    shape->dims = calloc((size_t)rank, sizeof(int64_t));
    if (!shape->dims) return NOT_ALLOCATED;
    shape->rank = rank;
    if (dims) memcpy(shape->dims, dims, (size_t)rank * sizeof(int64_t));
    return OK;
}

ov_status_e ov_shape_free(ov_shape_t* shape) {
    if (!shape) return INVALID_C_PARAM;
    free(shape->dims);
    shape->dims = NULL;
    shape->rank = 0;
    return OK;
}

/* A tensor wraps memory it does not own when made from a host pointer
 * (ov::Tensor over external memory): the caller keeps it alive. */
struct ov_tensor {
    ov_element_type_e type;
    int64_t rank;
    int64_t dims[8];
    void* data;
    int owned;
};

static size_t element_size(ov_element_type_e t) {
    switch (t) {
    case U8: case I8: case BOOLEAN: return 1;
    case F16: case BF16: case I16: case U16: return 2;
    case F32: case I32: case U32: return 4;
    case F64: case I64: case U64: return 8;
    default: return 1;
    }
}

static size_t elements(const struct ov_tensor* t) {
    size_t n = 1;
    for (int64_t i = 0; i < t->rank; i++) n *= (size_t)t->dims[i];
    return n;
}

static ov_status_e tensor_new(ov_element_type_e type, const ov_shape_t shape, void* data, ov_tensor_t** tensor) {
    if (!tensor || shape.rank <= 0 || shape.rank > 8 || !shape.dims) return INVALID_C_PARAM;
    struct ov_tensor* t = calloc(1, sizeof *t);
    t->type = type;
    t->rank = shape.rank;
    memcpy(t->dims, shape.dims, (size_t)shape.rank * sizeof(int64_t));
    t->data = data;
    if (!data) {
        t->data = calloc(elements(t), element_size(type));
        t->owned = 1;
    }
    *tensor = t;
    ovtest_object_created();
    return OK;
}

ov_status_e ov_tensor_create_from_host_ptr(const ov_element_type_e type, const ov_shape_t shape, void* host_ptr,
                                           ov_tensor_t** tensor) {
    if (!host_ptr) return INVALID_C_PARAM;
    return tensor_new(type, shape, host_ptr, tensor);
}

ov_status_e ov_tensor_create(const ov_element_type_e type, const ov_shape_t shape, ov_tensor_t** tensor) {
    return tensor_new(type, shape, NULL, tensor);
}

ov_status_e ov_tensor_set_shape(ov_tensor_t* tensor, const ov_shape_t shape) {
    if (!tensor || shape.rank <= 0 || shape.rank > 8) return INVALID_C_PARAM;
    tensor->rank = shape.rank;
    memcpy(tensor->dims, shape.dims, (size_t)shape.rank * sizeof(int64_t));
    return OK;
}

ov_status_e ov_tensor_get_shape(const ov_tensor_t* tensor, ov_shape_t* shape) {
    if (!tensor || !shape) return INVALID_C_PARAM;
    return ov_shape_create(tensor->rank, tensor->dims, shape);
}

ov_status_e ov_tensor_get_element_type(const ov_tensor_t* tensor, ov_element_type_e* type) {
    if (!tensor || !type) return INVALID_C_PARAM;
    *type = tensor->type;
    return OK;
}

ov_status_e ov_tensor_get_size(const ov_tensor_t* tensor, size_t* elements_size) {
    if (!tensor || !elements_size) return INVALID_C_PARAM;
    *elements_size = elements(tensor);
    return OK;
}

ov_status_e ov_tensor_get_byte_size(const ov_tensor_t* tensor, size_t* byte_size) {
    if (!tensor || !byte_size) return INVALID_C_PARAM;
    *byte_size = elements(tensor) * element_size(tensor->type);
    return OK;
}

ov_status_e ov_tensor_data(const ov_tensor_t* tensor, void** data) {
    if (!tensor || !data) return INVALID_C_PARAM;
    *data = tensor->data;
    return OK;
}

void ov_tensor_free(ov_tensor_t* tensor) {
    if (!tensor) return;
    if (tensor->owned) free(tensor->data);
    free(tensor);
    ovtest_object_freed();
}
