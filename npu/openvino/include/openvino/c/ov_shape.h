/*
 * npud test stand-in for OpenVINO's openvino/c/ov_shape.h: the same
 * include, type and functions as the official header of this path
 * (OpenVINO 2024 and later), so code compiled against it compiles against
 * the real one. Behaviour: testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"

typedef struct {
    int64_t rank;
    int64_t* dims;
} ov_shape_t;

OPENVINO_C_API(ov_status_e)
ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape);

OPENVINO_C_API(ov_status_e)
ov_shape_free(ov_shape_t* shape);
