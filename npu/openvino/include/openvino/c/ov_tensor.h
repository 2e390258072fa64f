/*
 * npud test stand-in for OpenVINO's openvino/c/ov_tensor.h: every function
 * the official header declares, with the same types and signatures. Its
 * include list is a subset of the official one: ov_partial_shape.h is left
 * out, as no declaration here needs it (docs/OPENVINO.md says why the rest
 * of OpenVINO's core C API is not reproduced). Behaviour:
 * testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_shape.h"

typedef struct ov_tensor ov_tensor_t;

OPENVINO_C_API(ov_status_e)
ov_tensor_create_from_host_ptr(const ov_element_type_e type,
                               const ov_shape_t shape,
                               void* host_ptr,
                               ov_tensor_t** tensor);

OPENVINO_C_API(ov_status_e)
ov_tensor_create(const ov_element_type_e type, const ov_shape_t shape, ov_tensor_t** tensor);

OPENVINO_C_API(ov_status_e)
ov_tensor_set_shape(ov_tensor_t* tensor, const ov_shape_t shape);

/* A STRING tensor holding copies of array_size C strings. */
OPENVINO_C_API(ov_status_e)
ov_tensor_create_from_string_array(const char** string_array,
                                   const size_t array_size,
                                   const ov_shape_t shape,
                                   ov_tensor_t** tensor);

OPENVINO_C_API(ov_status_e)
ov_tensor_get_shape(const ov_tensor_t* tensor, ov_shape_t* shape);

OPENVINO_C_API(ov_status_e)
ov_tensor_get_element_type(const ov_tensor_t* tensor, ov_element_type_e* type);

OPENVINO_C_API(ov_status_e)
ov_tensor_set_string_data(ov_tensor_t* tensor, const char** string_array, const size_t array_size);

OPENVINO_C_API(ov_status_e)
ov_tensor_get_size(const ov_tensor_t* tensor, size_t* elements_size);

OPENVINO_C_API(ov_status_e)
ov_tensor_get_byte_size(const ov_tensor_t* tensor, size_t* byte_size);

OPENVINO_C_API(ov_status_e)
ov_tensor_data(const ov_tensor_t* tensor, void** data);

OPENVINO_C_API(void)
ov_tensor_free(ov_tensor_t* tensor);
