/*
 * npud test stand-in for OpenVINO's openvino/c/ov_model.h, reduced to what
 * npud needs of a model read from disk: the opaque type, its free, and
 * reshaping its inputs by name (an embedding model's static shapes on the
 * NPU, npu/openvino/embed.go). Each declaration is the official one
 * (openvinotoolkit/openvino src/bindings/c/include/openvino/c/ov_model.h,
 * as the 2026.4.1 wheel installs it); the include list is a subset of the
 * official one (no declaration here needs ov_node.h). Behaviour:
 * testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_partial_shape.h"

/* A model read by ov_core_read_model; npud compiles it and frees it. */
typedef struct ov_model ov_model_t;

OPENVINO_C_API(void)
ov_model_free(ov_model_t* model);

/* Whether any input or output of the model has a dynamic dimension. */
OPENVINO_C_API(bool)
ov_model_is_dynamic(const ov_model_t* model);

/* Reshapes the inputs named tensor_names[i] to partial_shapes[i], size of
 * them, and infers the model's shapes again. */
OPENVINO_C_API(ov_status_e)
ov_model_reshape(const ov_model_t* model,
                 const char** tensor_names,
                 const ov_partial_shape_t* partial_shapes,
                 size_t size);
