/*
 * npud test stand-in for OpenVINO's openvino/c/ov_model.h, reduced to what
 * npud needs of a model read from disk: the opaque type and its free. Each
 * declaration is the official one (openvinotoolkit/openvino
 * src/bindings/c/include/openvino/c/ov_model.h, as the 2026.4.1 wheel
 * installs it); the include list is a subset of the official one (no
 * declaration here needs ov_node.h or ov_partial_shape.h). Behaviour:
 * testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"

/* A model read by ov_core_read_model; npud compiles it and frees it. */
typedef struct ov_model ov_model_t;

OPENVINO_C_API(void)
ov_model_free(ov_model_t* model);
