/*
 * npud test stand-in for OpenVINO's openvino/c/ov_core.h, reduced to what
 * npud calls: the version, devices and properties, extensions, and reading
 * and compiling a model (a model's tokenizer, npu/openvino/tokenizer.go).
 * Every declaration here is the official one, unchanged, and the include
 * list is a subset of the official one. Code compiled against this subset
 * therefore compiles against the full header (docs/OPENVINO.md says why
 * the rest of OpenVINO's core C API is not reproduced).
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_compiled_model.h"
#include "openvino/c/ov_model.h"
#include "openvino/c/ov_tensor.h"

typedef struct ov_core ov_core_t;

typedef struct ov_version {
    const char* buildNumber;
    const char* description;
} ov_version_t;

typedef struct {
    const char* device_name;
    ov_version_t version;
} ov_core_version_t;

typedef struct {
    ov_core_version_t* versions;
    size_t size;
} ov_core_version_list_t;

typedef struct {
    char** devices;
    size_t size;
} ov_available_devices_t;

OPENVINO_C_API(ov_status_e)
ov_get_openvino_version(ov_version_t* version);

OPENVINO_C_API(void)
ov_version_free(ov_version_t* version);

OPENVINO_C_API(ov_status_e)
ov_core_create(ov_core_t** core);

OPENVINO_C_API(ov_status_e)
ov_core_create_with_config(const char* xml_config_file, ov_core_t** core);

OPENVINO_C_API(void)
ov_core_free(ov_core_t* core);

OPENVINO_C_API(ov_status_e)
ov_core_set_property(const ov_core_t* core, const char* device_name, ...);

OPENVINO_C_API(ov_status_e)
ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key, char** property_value);

OPENVINO_C_API(ov_status_e)
ov_core_add_extension(const ov_core_t* core, const char* path);

/* bin_path NULL: the weights beside model_path, same name, .bin. */
OPENVINO_C_API(ov_status_e)
ov_core_read_model(const ov_core_t* core, const char* model_path, const char* bin_path, ov_model_t** model);

/* The trailing arguments are property_args_size pairs of key and value. */
OPENVINO_C_API(ov_status_e)
ov_core_compile_model(const ov_core_t* core,
                      const ov_model_t* model,
                      const char* device_name,
                      const size_t property_args_size,
                      ov_compiled_model_t** compiled_model,
                      ...);

OPENVINO_C_API(ov_status_e)
ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices);

OPENVINO_C_API(void)
ov_available_devices_free(ov_available_devices_t* devices);

OPENVINO_C_API(ov_status_e)
ov_core_get_versions_by_device_name(const ov_core_t* core, const char* device_name, ov_core_version_list_t* versions);

OPENVINO_C_API(void)
ov_core_versions_free(ov_core_version_list_t* versions);
