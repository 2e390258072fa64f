/*
 * npud test stand-in for OpenVINO's openvino/c/ov_common.h: the same macros,
 * enums, types and functions as the official header of OpenVINO 2026.2 to
 * 2026.4.1 (identical in those releases), so that code compiled against it
 * compiles against the real one and every enumerator has the real value.
 * A test (npu/openvino, TestOfficialCoreHeadersMatchTheVendored) compares each
 * declaration and enumerator value with the openvino wheel's include folder.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifndef OPENVINO_ENABLE_UNICODE_PATH_SUPPORT
#    ifdef _WIN32
#        if defined(__INTEL_COMPILER) || defined(_MSC_VER) || defined(__GNUC__)
#            define OPENVINO_ENABLE_UNICODE_PATH_SUPPORT
#        endif
#    elif defined(__clang__)
#        define OPENVINO_ENABLE_UNICODE_PATH_SUPPORT
#    elif defined(__GNUC__) && (__GNUC__ > 5 || (__GNUC__ == 5 && __GNUC_MINOR__ > 2))
#        define OPENVINO_ENABLE_UNICODE_PATH_SUPPORT
#    endif
#endif

#ifdef OPENVINO_ENABLE_UNICODE_PATH_SUPPORT
#    include <wchar.h>
#endif

#ifdef __cplusplus
#    define OPENVINO_C_API_EXTERN extern "C"
#else
#    define OPENVINO_C_API_EXTERN extern
#endif

#if defined(OPENVINO_STATIC_LIBRARY) || defined(__GNUC__) && (__GNUC__ < 4)
#    define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __VA_ARGS__
#    define OPENVINO_C_VAR(...) OPENVINO_C_API_EXTERN __VA_ARGS__
#    define OV_NODISCARD
#else
#    if defined(_WIN32) || defined(__CYGWIN__)
#        define OPENVINO_C_API_CALLBACK __cdecl
#        ifdef openvino_c_EXPORTS
#            define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __declspec(dllexport) __VA_ARGS__ __cdecl
#            define OPENVINO_C_VAR(...) OPENVINO_C_API_EXTERN __declspec(dllexport) __VA_ARGS__
#        else
#            define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __declspec(dllimport) __VA_ARGS__ __cdecl
#            define OPENVINO_C_VAR(...) OPENVINO_C_API_EXTERN __declspec(dllimport) __VA_ARGS__
#        endif
#        define OV_NODISCARD
#    else
#        define OPENVINO_C_API(...) OPENVINO_C_API_EXTERN __attribute__((visibility("default"))) __VA_ARGS__
#        define OPENVINO_C_VAR(...) OPENVINO_C_API_EXTERN __attribute__((visibility("default"))) __VA_ARGS__
#        define OV_NODISCARD        __attribute__((warn_unused_result))
#    endif
#endif

#ifndef OPENVINO_C_API_CALLBACK
#    define OPENVINO_C_API_CALLBACK
#endif

/* Every C API call answers one of these; GenAI's C wrapper maps every C++
 * exception to UNKNOW_EXCEPTION (sic). */
typedef enum {
    OK = 0,
    GENERAL_ERROR = -1,
    NOT_IMPLEMENTED = -2,
    NETWORK_NOT_LOADED = -3,
    PARAMETER_MISMATCH = -4,
    NOT_FOUND = -5,
    OUT_OF_BOUNDS = -6,
    UNEXPECTED = -7,
    REQUEST_BUSY = -8,
    RESULT_NOT_READY = -9,
    NOT_ALLOCATED = -10,
    INFER_NOT_STARTED = -11,
    NETWORK_NOT_READ = -12,
    INFER_CANCELLED = -13,
    INVALID_C_PARAM = -14,
    UNKNOWN_C_ERROR = -15,
    NOT_IMPLEMENT_C_METHOD = -16,
    UNKNOW_EXCEPTION = -17,
} ov_status_e;

/* Follows ov::element::Type_t: there is no UNDEFINED (older releases had
 * one at 0), and U2, U3, U6 sit between the others, so U8 is 16. */
typedef enum {
    DYNAMIC = 0U,
    BOOLEAN,
    BF16,
    F16,
    F32,
    F64,
    I4,
    I8,
    I16,
    I32,
    I64,
    U1,
    U2,
    U3,
    U4,
    U6,
    U8,
    U16,
    U32,
    U64,
    NF4,
    F8E4M3,
    F8E5M3,
    STRING,
    F4E2M1,
    F8E8M0,
} ov_element_type_e;

typedef void (*encryption_func)(const char*, const size_t, char*, size_t*);
typedef struct {
    encryption_func encrypt_func;
    encryption_func decrypt_func;
} ov_encryption_callbacks;

/* A static text per status; never passed to ov_free. */
OPENVINO_C_API(const char*)
ov_get_error_info(ov_status_e status);

OPENVINO_C_API(void)
ov_free(const char* content);

/* The message of the last exception the C API caught on this thread. */
OPENVINO_C_API(const char*)
ov_get_last_err_msg();
