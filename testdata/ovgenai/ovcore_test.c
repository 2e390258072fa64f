/*
 * npud's test implementation of the OpenVINO core C API subset npud calls.
 * Devices come from the environment: OVTEST_DEVICES="CPU,GPU,NPU" (default
 * "CPU"); FULL_DEVICE_NAME is "Test <name> device", an NPU's
 * NPU_DRIVER_VERSION is OVTEST_NPU_DRIVER (default "1688"). The version is
 * OVTEST_VERSION (default a 2026.3 build number).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>

#include "openvino/c/ov_core.h"
#include "ovtest.h"

/* Every object either test library hands out is counted here. */
static atomic_long live_objects;

void ovtest_object_created(void) { atomic_fetch_add(&live_objects, 1); }
void ovtest_object_freed(void) { atomic_fetch_sub(&live_objects, 1); }
int64_t ovtest_live_objects(void) { return atomic_load(&live_objects); }

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
        return NOT_FOUND; /* as the real core answers an unsupported property */
    }
    *property_value = strdup(buf);
    ovtest_object_created();
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

const char* ov_get_error_info(ov_status_e status) {
    switch (status) {
    case OK: return "ok";
    case INVALID_C_PARAM: return "invalid c input parameters";
    case OUT_OF_BOUNDS: return "out of bounds";
    case UNKNOW_EXCEPTION: return "unknown exception";
    default: return "error";
    }
}
