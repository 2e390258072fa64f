/*
 * npud test stand-in for OpenVINO's openvino/c/ov_dimension.h: the
 * dimension type a partial shape is made of (a static dimension has min
 * equal to max). Each declaration is the official one (the 2026.4.1 wheel's
 * include folder; TestOfficialCoreHeadersMatchTheVendored compares them).
 * Behaviour: testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"

typedef struct ov_dimension {
    int64_t min;
    int64_t max;
} ov_dimension_t;
