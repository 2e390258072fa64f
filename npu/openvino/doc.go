// Package openvino is the OpenVINO GenAI engine: it runs models on the NPU,
// GPU or CPU through GenAI's C API, via cgo, and streams from GenAI's
// native streamer threads into the npu bridge.
//
// Nothing links against OpenVINO: OpenLibrary finds GenAI's C library at
// run time (dlopen, LoadLibrary) and resolves every function npud calls
// into a table typed from the headers in include/ (token-identical to the
// official ones, which CGO_CFLAGS can put first to check against). The
// package needs cgo; tests load npud's own GenAI test library
// (testdata/ovgenai, built by ovtestlib) through the same discovery.
package openvino
