// npud's run-time loader for OpenVINO GenAI's C API (see ovapi.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovapi.h"

#ifdef _WIN32
#include <windows.h>

static void* npud_lib_open(const char* path, char* err, size_t err_len) {
    // An absolute path's folder is searched for the DLLs it needs
    // (openvino.dll and the rest of the archive's runtime/bin).
    HMODULE h = LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!h) snprintf(err, err_len, "%s: LoadLibrary failed with error %lu", path, (unsigned long)GetLastError());
    return (void*)h;
}

static void* npud_lib_symbol(void* lib, const char* name) {
    return lib ? (void*)GetProcAddress((HMODULE)lib, name) : NULL;
}
#else
#include <dlfcn.h>

static void* npud_lib_open(const char* path, char* err, size_t err_len) {
    // RTLD_LOCAL: OpenVINO's symbols stay out of the global scope, where
    // they could be taken for another library's.
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* why = dlerror();
        snprintf(err, err_len, "%s", why ? why : path);
    }
    return h;
}

static void* npud_lib_symbol(void* lib, const char* name) {
    // dlsym on a handle also searches the libraries it depends on, so the
    // core functions resolve from GenAI's C library when no core was given.
    return lib ? dlsym(lib, name) : NULL;
}
#endif

// The libraries are never closed: OpenVINO keeps threads and plugin
// libraries of its own alive, and unloading code they may still run is
// not safe. A process opens them once.
npud_ov_api* npud_ov_open(const char* core_path, const char* genai_path, char* err, size_t err_len) {
    npud_ov_api* api = calloc(1, sizeof *api);
    if (!api) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    // The core first: GenAI's C library needs it, and loading it by path
    // lets the loader find it by its soname even where no search path
    // names its folder.
    if (core_path && !(api->core = npud_lib_open(core_path, err, err_len))) {
        free(api);
        return NULL;
    }
    if (!(api->genai = npud_lib_open(genai_path, err, err_len))) {
        free(api);
        return NULL;
    }
    const char* missing = NULL;
    // A core function comes from the core library, or from GenAI's C
    // library's dependencies when no core path was given (Linux).
#define CORE (api->core ? api->core : api->genai)
#define GENAI api->genai
#define NPUD_OV_RESOLVE(lib, name)                 \
    if (!missing) {                                \
        void* p = npud_lib_symbol(lib, #name);     \
        if (p) memcpy(&api->name, &p, sizeof p);   \
        else missing = #name;                      \
    }
    NPUD_OV_FUNCTIONS(NPUD_OV_RESOLVE)
#undef NPUD_OV_RESOLVE
#undef CORE
#undef GENAI
    if (missing) {
        snprintf(err, err_len, "missing symbol %s", missing);
        free(api);
        return NULL;
    }
    return api;
}

void* npud_ov_symbol(const npud_ov_api* api, const char* name) {
    void* p = npud_lib_symbol(api->genai, name);
    return p ? p : npud_lib_symbol(api->core, name);
}

int npud_lib_probe(const char* name) {
    char err[256];
    return npud_lib_open(name, err, sizeof err) != NULL;
}
