/*
 * npud test stand-in for OpenVINO's openvino/c/ov_rank.h: a partial
 * shape's rank, a dimension. The declaration is the official one (the
 * 2026.4.1 wheel's include folder).
 */
#pragma once

#include "openvino/c/ov_dimension.h"

typedef ov_dimension_t ov_rank_t;
