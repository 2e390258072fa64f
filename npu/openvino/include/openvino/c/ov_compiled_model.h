/*
 * npud test stand-in for OpenVINO's openvino/c/ov_compiled_model.h, reduced
 * to what npud needs of a compiled model: an infer request, and its free.
 * Each declaration is the official one (openvinotoolkit/openvino
 * src/bindings/c/include/openvino/c/ov_compiled_model.h, as the 2026.4.1
 * wheel installs it); the include list is a subset of the official one.
 * Behaviour: testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_infer_request.h"
#include "openvino/c/ov_model.h"

typedef struct ov_compiled_model ov_compiled_model_t;

OPENVINO_C_API(ov_status_e)
ov_compiled_model_create_infer_request(const ov_compiled_model_t* compiled_model, ov_infer_request_t** infer_request);

OPENVINO_C_API(void)
ov_compiled_model_free(ov_compiled_model_t* compiled_model);
