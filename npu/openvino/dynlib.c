// The platform's dynamic loader for loader.c. No OpenVINO header here:
// windows.h and OpenVINO's ov_common.h both define BOOL and FLOAT.
#include <stddef.h>
#include <stdio.h>

#ifdef _WIN32
#include <windows.h>

void* npud_lib_open(const char* path, char* err, size_t err_len) {
    // An absolute path's folder is searched for the DLLs it needs
    // (openvino.dll and the rest of the archive's runtime/bin).
    HMODULE h = LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!h) snprintf(err, err_len, "%s: LoadLibrary failed with error %lu", path, (unsigned long)GetLastError());
    return (void*)h;
}

void* npud_lib_symbol(void* lib, const char* name) {
    return lib ? (void*)GetProcAddress((HMODULE)lib, name) : NULL;
}
#else
#include <dlfcn.h>

void* npud_lib_open(const char* path, char* err, size_t err_len) {
    // RTLD_LOCAL: OpenVINO's symbols stay out of the global scope, where
    // they could be taken for another library's.
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* why = dlerror();
        snprintf(err, err_len, "%s", why ? why : path);
    }
    return h;
}

void* npud_lib_symbol(void* lib, const char* name) {
    // dlsym on a handle also searches the libraries it depends on, so the
    // core functions resolve from GenAI's C library when no core was given.
    return lib ? dlsym(lib, name) : NULL;
}
#endif
