// Package openvino is the OpenVINO GenAI engine: it runs models on the NPU,
// GPU or CPU through GenAI's C API, via cgo, and streams from GenAI's
// native streamer threads into the npu bridge.
//
// The package builds only with the `openvino` build tag, against the real
// OpenVINO GenAI headers and libraries (include and library paths from
// CGO_CFLAGS/CGO_LDFLAGS, see the Makefile's openvino targets), or, for
// tests on machines without OpenVINO, against npud's own test library in
// testdata/ovgenai, which implements the same C functions.
package openvino
