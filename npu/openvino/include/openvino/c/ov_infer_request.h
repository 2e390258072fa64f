/*
 * npud test stand-in for OpenVINO's openvino/c/ov_infer_request.h, reduced
 * to the calls npud makes to run a compiled model once: set the inputs,
 * run it (asynchronously, waited for in slices, cancellable), read an
 * output. Each declaration is the official one (openvinotoolkit/openvino
 * src/bindings/c/include/openvino/c/ov_infer_request.h, as the 2026.4.1
 * wheel installs it); the include list is a subset of the official one
 * (no declaration here needs ov_node.h). Behaviour:
 * testdata/ovgenai/ovcore_test.c.
 */
#pragma once

#include "openvino/c/ov_common.h"
#include "openvino/c/ov_tensor.h"

typedef struct ov_infer_request ov_infer_request_t;

OPENVINO_C_API(ov_status_e)
ov_infer_request_set_input_tensor_by_index(ov_infer_request_t* infer_request,
                                           const size_t idx,
                                           const ov_tensor_t* tensor);

/* An embedding model's inputs are set by name (npu/openvino/embed.go). */
OPENVINO_C_API(ov_status_e)
ov_infer_request_set_tensor(ov_infer_request_t* infer_request, const char* tensor_name, const ov_tensor_t* tensor);

/* The tensor npud reads is the request's: valid until the next inference,
 * freed (the handle, not the data) with ov_tensor_free. */
OPENVINO_C_API(ov_status_e)
ov_infer_request_get_tensor(const ov_infer_request_t* infer_request, const char* tensor_name, ov_tensor_t** tensor);

OPENVINO_C_API(ov_status_e)
ov_infer_request_infer(ov_infer_request_t* infer_request);

OPENVINO_C_API(ov_status_e)
ov_infer_request_cancel(ov_infer_request_t* infer_request);

OPENVINO_C_API(ov_status_e)
ov_infer_request_start_async(ov_infer_request_t* infer_request);

OPENVINO_C_API(ov_status_e)
ov_infer_request_wait(ov_infer_request_t* infer_request);

/* RESULT_NOT_READY when timeout milliseconds pass first
 * (src/bindings/c/src/ov_infer_request.cpp). */
OPENVINO_C_API(ov_status_e)
ov_infer_request_wait_for(ov_infer_request_t* infer_request, const int64_t timeout);

OPENVINO_C_API(void)
ov_infer_request_free(ov_infer_request_t* infer_request);
