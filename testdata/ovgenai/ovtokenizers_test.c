/*
 * npud's stand-in for the openvino-tokenizers library: an OpenVINO
 * extension library exports create_extensions (OPENVINO_CREATE_EXTENSIONS),
 * which the core looks up when it loads it (ov_core_add_extension). This
 * one registers nothing; that it loads is what the test library checks.
 */
#include <stddef.h>

#if defined(_WIN32)
#define OVTEST_EXPORT __declspec(dllexport)
#else
#define OVTEST_EXPORT __attribute__((visibility("default")))
#endif

OVTEST_EXPORT void create_extensions(void* extensions) { (void)extensions; }
