// npud's run-time loader for OpenVINO GenAI's C API (see ovapi.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovapi.h"

// The platform's loader (dynlib.c): it includes windows.h, whose BOOL and
// FLOAT clash with OpenVINO's ov_element_type_e, so it stays apart.
void* npud_lib_open(const char* path, char* err, size_t err_len);
void* npud_lib_symbol(void* lib, const char* name);

// resolve_tokenizer fills the tokenizer's table from the core library lib
// (optional: tokenizer_missing names the first function it lacks).
static void resolve_tokenizer(npud_ov_api* api, void* lib) {
#define NPUD_OV_RESOLVE_TOKENIZER(from, name)                           \
    {                                                                   \
        void* p = npud_lib_symbol(lib, #name);                          \
        if (p) memcpy(&api->tok.name, &p, sizeof p);                    \
        else if (!api->tokenizer_missing) api->tokenizer_missing = #name; \
    }
    NPUD_OV_TOKENIZER_FUNCTIONS(NPUD_OV_RESOLVE_TOKENIZER)
#undef NPUD_OV_RESOLVE_TOKENIZER
}

// resolve_embed fills the embedding table from the core library lib
// (optional: embed_missing names the first function it lacks).
static void resolve_embed(npud_ov_api* api, void* lib) {
#define NPUD_OV_RESOLVE_EMBED(from, name)                               \
    {                                                                   \
        void* p = npud_lib_symbol(lib, #name);                          \
        if (p) memcpy(&api->emb.name, &p, sizeof p);                    \
        else if (!api->embed_missing) api->embed_missing = #name;       \
    }
    NPUD_OV_EMBED_FUNCTIONS(NPUD_OV_RESOLVE_EMBED)
#undef NPUD_OV_RESOLVE_EMBED
}

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
#define NPUD_OV_RESOLVE_OPTIONAL(lib, name)                      \
    {                                                            \
        void* p = npud_lib_symbol(lib, #name);                   \
        if (p) memcpy(&api->name, &p, sizeof p);                 \
        else if (!api->vision_missing) api->vision_missing = #name; \
    }
    NPUD_OV_VISION_FUNCTIONS(NPUD_OV_RESOLVE_OPTIONAL)
#undef NPUD_OV_RESOLVE_OPTIONAL
#define NPUD_OV_RESOLVE_SPEECH(lib, name)                             \
    {                                                                 \
        void* p = npud_lib_symbol(lib, #name);                        \
        if (p) memcpy(&api->name, &p, sizeof p);                      \
        else if (!api->speech_missing) api->speech_missing = #name;   \
    }
    NPUD_OV_SPEECH_FUNCTIONS(NPUD_OV_RESOLVE_SPEECH)
#undef NPUD_OV_RESOLVE_SPEECH
    resolve_tokenizer(api, CORE);
    resolve_embed(api, CORE);
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

int npud_lib_keep(const char* path, char* err, size_t err_len) {
    return npud_lib_open(path, err, err_len) != NULL;
}

// Only the core's entries: a GENAI entry expands to nothing.
#define NPUD_OV_CORE_ONLY_CORE(name) NPUD_OV_RESOLVE(api->core, name)
#define NPUD_OV_CORE_ONLY_GENAI(name)
#define NPUD_OV_RESOLVE_IF_CORE(lib, name) NPUD_OV_CORE_ONLY_##lib(name)

npud_ov_api* npud_ov_open_core(const char* core_path, char* err, size_t err_len) {
    npud_ov_api* api = calloc(1, sizeof *api);
    if (!api) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    if (!(api->core = npud_lib_open(core_path, err, err_len))) {
        free(api);
        return NULL;
    }
    const char* missing = NULL;
#define NPUD_OV_RESOLVE(lib, name)                 \
    if (!missing) {                                \
        void* p = npud_lib_symbol(lib, #name);     \
        if (p) memcpy(&api->name, &p, sizeof p);   \
        else missing = #name;                      \
    }
    NPUD_OV_FUNCTIONS(NPUD_OV_RESOLVE_IF_CORE)
#undef NPUD_OV_RESOLVE
    if (missing) {
        snprintf(err, err_len, "missing symbol %s", missing);
        free(api);
        return NULL;
    }
    resolve_tokenizer(api, api->core);
    resolve_embed(api, api->core);
    return api;
}
