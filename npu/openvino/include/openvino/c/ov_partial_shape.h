/*
 * npud test stand-in for OpenVINO's openvino/c/ov_partial_shape.h, reduced
 * to what npud needs to give an embedding model the NPU's static shapes
 * (npu/openvino/embed.go): the type, a static shape made from its dims,
 * and its free. Each declaration is the official one (the 2026.4.1 wheel's
 * include folder); the include list is a subset of the official one (no
 * declaration here needs ov_layout.h). Behaviour:
 * testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_dimension.h"
#include "openvino/c/ov_rank.h"
#include "openvino/c/ov_shape.h"

typedef struct ov_partial_shape {
    ov_rank_t rank;
    ov_dimension_t* dims;
} ov_partial_shape_t;

/* A static partial shape of rank dims; free it with ov_partial_shape_free. */
OPENVINO_C_API(ov_status_e)
ov_partial_shape_create_static(const int64_t rank, const int64_t* dims, ov_partial_shape_t* partial_shape_obj);

OPENVINO_C_API(void)
ov_partial_shape_free(ov_partial_shape_t* partial_shape);
