/*
 * npud's test implementation of the OpenVINO core C API subset npud calls.
 * Devices come from the environment: OVTEST_DEVICES="CPU,GPU,NPU" (default
 * "CPU"); FULL_DEVICE_NAME is "Test <name> device", an NPU's
 * NPU_DRIVER_VERSION is OVTEST_NPU_DRIVER (default "1688"). The version is
 * OVTEST_VERSION (default a 2026.3 build number). OVTEST_CRASH_LISTING set
 * makes listing the devices crash (SIGSEGV), as a plugin's bad pointer
 * would; ov_core_add_extension loads a library that exports OpenVINO's
 * create_extensions, as the real core does (openvino-tokenizers). An IR
 * naming last_hidden_state is an embedding model (below the tokenizer's
 * part): its inputs are set by name and its hidden states are
 * ovtest_hidden's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <dlfcn.h>
#include <signal.h>
#endif

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

#include "openvino/c/ov_core.h"
#include "ovtest.h"

/* Every object either test library hands out is counted here. */
static atomic_long live_objects;

void ovtest_object_created(void) { atomic_fetch_add(&live_objects, 1); }
void ovtest_object_freed(void) { atomic_fetch_sub(&live_objects, 1); }
int64_t ovtest_live_objects(void) { return atomic_load(&live_objects); }

/* The core keeps the message of the last exception its C API caught, per
 * thread: a success leaves it, ov_core_free clears it, and before any
 * failure there is none (NULL), as libopenvino_c 2026.4.1 does. */
static _Thread_local char last_err_msg[512];

const char* ov_get_last_err_msg(void) { return last_err_msg[0] ? last_err_msg : NULL; }

struct ov_core {
    atomic_int extensions; /* ov_core_add_extension loaded one (openvino-tokenizers) */
};

ov_status_e ov_core_create(ov_core_t** core) {
    if (!core) return INVALID_C_PARAM;
    *core = calloc(1, sizeof(ov_core_t));
    ovtest_object_created();
    return OK;
}

void ov_core_free(ov_core_t* core) {
    last_err_msg[0] = 0;
    if (!core) return;
    free(core);
    ovtest_object_freed();
}

const char* ovtest_devices(void) {
    const char* d = getenv("OVTEST_DEVICES");
    return d && *d ? d : "CPU";
}

ov_status_e ov_core_get_available_devices(const ov_core_t* core, ov_available_devices_t* devices) {
    if (!core || !devices) return INVALID_C_PARAM;
#ifndef _WIN32
    if (getenv("OVTEST_CRASH_LISTING")) {
        raise(SIGSEGV);
        abort(); /* not reached */
    }
#endif
    char* list = strdup(ovtest_devices());
    size_t n = 1;
    for (char* p = list; *p; p++) n += *p == ',';
    devices->devices = calloc(n, sizeof(char*));
    devices->size = 0;
    for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) devices->devices[devices->size++] = strdup(tok);
    free(list);
    ovtest_object_created();
    return OK;
}

void ov_available_devices_free(ov_available_devices_t* devices) {
    if (!devices || !devices->devices) return;
    for (size_t i = 0; i < devices->size; i++) free(devices->devices[i]);
    free(devices->devices);
    devices->devices = NULL;
    devices->size = 0;
    ovtest_object_freed();
}

ov_status_e ov_core_get_property(const ov_core_t* core, const char* device_name, const char* property_key,
                                 char** property_value) {
    if (!core || !device_name || !property_key || !property_value) return INVALID_C_PARAM;
    char buf[128];
    if (strcmp(property_key, "FULL_DEVICE_NAME") == 0) {
        snprintf(buf, sizeof buf, "Test %s device", device_name);
    } else if (strcmp(property_key, "NPU_DRIVER_VERSION") == 0 && strncmp(device_name, "NPU", 3) == 0) {
        const char* v = getenv("OVTEST_NPU_DRIVER");
        snprintf(buf, sizeof buf, "%s", v && *v ? v : "1688");
    } else {
        /* The plugin throws; the C API answers GENERAL_ERROR and keeps the
         * exception's text, the plugin's words on its last line. */
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nCannot get unsupported property: %s\n\n\n",
                 property_key);
        return GENERAL_ERROR;
    }
    *property_value = strdup(buf);
    ovtest_object_created();
    return OK;
}

ov_status_e ov_core_add_extension(const ov_core_t* core, const char* path) {
    if (!core || !path) return INVALID_C_PARAM;
#ifndef _WIN32
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nCannot load library '%s': %s\n", path,
                 dlerror());
        return GENERAL_ERROR;
    }
    if (!dlsym(h, "create_extensions")) {
        snprintf(last_err_msg, sizeof last_err_msg,
                 "Exception from ovcore_test.c:\nLibrary '%s' is not an OpenVINO extension: no create_extensions\n", path);
        dlclose(h);
        return GENERAL_ERROR;
    }
#endif
    /* The core's state changes behind its const handle, as the real one's
     * (a shared_ptr to ov::Core) does. */
    atomic_store(&((ov_core_t*)core)->extensions, 1);
    return OK;
}

void ov_free(const char* content) {
    if (!content) return;
    free((void*)content);
    ovtest_object_freed();
}

/* Like the real one, the version's strings are the caller's to free with
 * ov_version_free. */
ov_status_e ov_get_openvino_version(ov_version_t* version) {
    if (!version) return INVALID_C_PARAM;
    const char* build = getenv("OVTEST_VERSION");
    version->buildNumber = strdup(build && *build ? build : "2026.3.0-20000-ovtest-releases/2026/3");
    version->description = strdup("OpenVINO Runtime");
    ovtest_object_created();
    return OK;
}

void ov_version_free(ov_version_t* version) {
    if (!version || !version->buildNumber) return;
    free((void*)version->buildNumber);
    free((void*)version->description);
    version->buildNumber = version->description = NULL;
    ovtest_object_freed();
}

/* OpenVINO's texts, indexed by -status; anything past the last (or a
 * positive status) is the last (src/bindings/c/src/ov_common.cpp). */
static const char* const error_infos[] = {"success",
                                          "general error",
                                          "it's not implement",
                                          "failed to network",
                                          "input parameter mismatch",
                                          "cannot find the value",
                                          "out of bounds",
                                          "run with unexpected error",
                                          "request is busy",
                                          "result is not ready",
                                          "it is not allocated",
                                          "inference start with error",
                                          "network is not ready",
                                          "inference is canceled",
                                          "invalid c input parameters",
                                          "unknown c error",
                                          "not implement in c method",
                                          "unknown exception"};

const char* ov_get_error_info(ov_status_e status) {
    size_t index = (size_t)(-(long long)status), last = sizeof error_infos / sizeof *error_infos - 1;
    return error_infos[index > last ? last : index];
}

/* ---- shapes and tensors (openvino/c/ov_shape.h, ov_tensor.h) ---- */

#include "openvino/c/ov_tensor.h"

ov_status_e ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape) {
    if (!shape || rank <= 0) return INVALID_C_PARAM;
    shape->dims = calloc((size_t)rank, sizeof(int64_t));
    if (!shape->dims) return NOT_ALLOCATED;
    shape->rank = rank;
    if (dims) memcpy(shape->dims, dims, (size_t)rank * sizeof(int64_t));
    return OK;
}

ov_status_e ov_shape_free(ov_shape_t* shape) {
    if (!shape) return INVALID_C_PARAM;
    free(shape->dims);
    shape->dims = NULL;
    shape->rank = 0;
    return OK;
}

/* A tensor wraps memory it does not own when made from a host pointer
 * (ov::Tensor over external memory): the caller keeps it alive. A STRING
 * tensor owns copies of its strings (ov::Tensor of std::string). */
struct ov_tensor {
    ov_element_type_e type;
    int64_t rank;
    int64_t dims[8];
    void* data;
    int owned;
    char** strings; /* STRING: elements(t) copies */
};

static size_t element_size(ov_element_type_e t) {
    switch (t) {
    case U8: case I8: case BOOLEAN: return 1;
    case F16: case BF16: case I16: case U16: return 2;
    case F32: case I32: case U32: return 4;
    case F64: case I64: case U64: return 8;
    default: return 1;
    }
}

static size_t elements(const struct ov_tensor* t) {
    size_t n = 1;
    for (int64_t i = 0; i < t->rank; i++) n *= (size_t)t->dims[i];
    return n;
}

static ov_status_e tensor_new(ov_element_type_e type, const ov_shape_t shape, void* data, ov_tensor_t** tensor) {
    if (!tensor || shape.rank <= 0 || shape.rank > 8 || !shape.dims) return INVALID_C_PARAM;
    struct ov_tensor* t = calloc(1, sizeof *t);
    t->type = type;
    t->rank = shape.rank;
    memcpy(t->dims, shape.dims, (size_t)shape.rank * sizeof(int64_t));
    t->data = data;
    if (!data) {
        t->data = calloc(elements(t), element_size(type));
        t->owned = 1;
    }
    *tensor = t;
    ovtest_object_created();
    return OK;
}

ov_status_e ov_tensor_create_from_host_ptr(const ov_element_type_e type, const ov_shape_t shape, void* host_ptr,
                                           ov_tensor_t** tensor) {
    if (!host_ptr) return INVALID_C_PARAM;
    return tensor_new(type, shape, host_ptr, tensor);
}

ov_status_e ov_tensor_create(const ov_element_type_e type, const ov_shape_t shape, ov_tensor_t** tensor) {
    return tensor_new(type, shape, NULL, tensor);
}

ov_status_e ov_tensor_set_shape(ov_tensor_t* tensor, const ov_shape_t shape) {
    if (!tensor || shape.rank <= 0 || shape.rank > 8) return INVALID_C_PARAM;
    tensor->rank = shape.rank;
    memcpy(tensor->dims, shape.dims, (size_t)shape.rank * sizeof(int64_t));
    return OK;
}

ov_status_e ov_tensor_get_shape(const ov_tensor_t* tensor, ov_shape_t* shape) {
    if (!tensor || !shape) return INVALID_C_PARAM;
    return ov_shape_create(tensor->rank, tensor->dims, shape);
}

ov_status_e ov_tensor_get_element_type(const ov_tensor_t* tensor, ov_element_type_e* type) {
    if (!tensor || !type) return INVALID_C_PARAM;
    *type = tensor->type;
    return OK;
}

ov_status_e ov_tensor_get_size(const ov_tensor_t* tensor, size_t* elements_size) {
    if (!tensor || !elements_size) return INVALID_C_PARAM;
    *elements_size = elements(tensor);
    return OK;
}

ov_status_e ov_tensor_get_byte_size(const ov_tensor_t* tensor, size_t* byte_size) {
    if (!tensor || !byte_size) return INVALID_C_PARAM;
    *byte_size = elements(tensor) * element_size(tensor->type);
    return OK;
}

ov_status_e ov_tensor_data(const ov_tensor_t* tensor, void** data) {
    if (!tensor || !data) return INVALID_C_PARAM;
    *data = tensor->data;
    return OK;
}

void ov_tensor_free(ov_tensor_t* tensor) {
    if (!tensor) return;
    if (tensor->strings) {
        for (size_t i = 0; i < elements(tensor); i++) free(tensor->strings[i]);
        free(tensor->strings);
    }
    if (tensor->owned) free(tensor->data);
    free(tensor);
    ovtest_object_freed();
}

/* ---- a model's tokenizer (openvino/c/ov_model.h, ov_compiled_model.h,
 * ov_infer_request.h): the folder's openvino_tokenizer.xml read, compiled on
 * the CPU, and run on a string tensor, as npu/openvino/tokenizer.go does with
 * the real core and openvino-tokenizers. ----
 *
 * The tokenizer is the tokenizer.json beside the IR (ovtest_tokenize, with
 * which the test GenAI also counts a prompt, so the two never disagree):
 * the tiny model's byte-level BPE, tokenized as the real one does
 * (ovbpe_test.c; npu/openvino's TestOfficialTestLibraryTokenizesLikeGenAI
 * compares the ids with the real runtime's), or, for the tests' model
 * folders without one, the test model's words. The IR is read through the
 * path given, so a prompt view's tokenizer.json (a symlink to the model's)
 * is the model's.
 *
 * The special tokens the IR adds (add_special_tokens, fixed at export: GenAI
 * makes it a state with its MakeAddSpecialTokensSatateful pass, which the C
 * API cannot run) are read from the IR's rt_info, as openvino-tokenizers
 * writes it: processed_post_processor_template's "single" ids, -1 standing
 * for the text, the ids before it added in front and those after it at the
 * end (a Llama tokenizer: [1, -1]; the tiny model's: [-1]). An IR without
 * one adds nothing. A text holding OVTEST_HANG_TOKENIZE never finishes until
 * the request is cancelled. */

#define MAX_SPECIAL 8

static atomic_int tokenizer_running, tokenizer_cancelled;

int ovtest_tokenizer_running(void) { return atomic_load(&tokenizer_running); }
int ovtest_tokenizer_cancelled(void) { return atomic_load(&tokenizer_cancelled); }

struct special_tokens {
    int64_t prefix[MAX_SPECIAL], suffix[MAX_SPECIAL];
    size_t nprefix, nsuffix;
};

/* An embedding model (an IR naming last_hidden_state, as optimum-intel's
 * feature-extraction exports do): its inputs are set by name, and each
 * token's hidden state is OVTEST_EMBED_WIDTH values of its id alone,
 * ovtest_hidden (ovtest.h), whatever the mask (the pooling is npud's). A
 * cross-encoder (an IR naming logits, a sequence-classification export)
 * gives one logit a row from the tokens its mask keeps (ovtest_logit_term).
 *
 * Their inputs (input_ids, attention_mask, token_type_ids where the IR
 * names it) are [?, ?] as exported, until ov_model_reshape makes them
 * static. As the real plugins do, the NPU compiles only a static model
 * (model_validation.cpp in openvino src/plugins/intel_npu/src/plugin/src
 * refuses an unbounded dynamic dimension, in the words below), and a
 * compiled static model takes input tensors of its shape only, refused in
 * the NPU plugin's words (check_tensor in
 * intel_npu/src/common/src/sync_infer_request.cpp) or the CPU plugin's
 * (intel_cpu/src/infer_request.cpp, as the 2026.4.1 wheel's says them). */
enum { IN_IDS, IN_MASK, IN_TYPES, N_INPUTS };
static const char* const input_names[N_INPUTS] = {"input_ids", "attention_mask", "token_type_ids"};

struct encoder_shape {
    int inputs;                  /* 2, or 3 with token_type_ids */
    int64_t dims[N_INPUTS][2];   /* each input's [batch, length]; -1: dynamic */
};

struct ov_model {
    struct special_tokens special;
    ovtest_vocab* vocab; /* NULL: the word tokenizer */
    int embedding, cross;
    struct encoder_shape shape;
    char path[1024]; /* the IR read, which a cached blob's name hashes */
};

struct ov_compiled_model {
    struct special_tokens special;
    ovtest_vocab* vocab;
    int embedding, cross, npu;
    struct encoder_shape shape;
};

struct ov_infer_request {
    struct special_tokens special;
    ovtest_vocab* vocab;
    int embedding, cross, npu;
    struct encoder_shape shape;
    int64_t *emb_ids, rows, cols; /* an embedding model's input_ids, [rows, cols] */
    int64_t *emb_mask, *emb_types; /* its attention_mask and token_type_ids (NULL: unset), the same shape */
    float* hidden;                 /* and its last inference's last_hidden_state (or logits) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char* input;        /* the string of input 0 */
    int running;        /* an inference started and not finished */
    int joinable;       /* its thread is still to be joined */
    int cancelled;
    ov_status_e result; /* the last inference's */
    pthread_t thread;
    int64_t* ids; /* the last inference's input_ids */
    size_t n;
};

/* read_special parses the ids of the "single" template in the IR's
 * processed_post_processor_template (XML-escaped JSON). */
static void read_special(const char* xml, struct special_tokens* sp) {
    memset(sp, 0, sizeof *sp);
    const char* at = strstr(xml, "processed_post_processor_template");
    if (!at || !(at = strstr(at, "single")) || !(at = strstr(at, "ids")) || !(at = strchr(at, '['))) return;
    int after = 0;
    for (const char* p = at + 1; *p && *p != ']';) {
        char* end;
        long long id = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        p = end;
        if (id == -1) after = 1;
        else if (!after && sp->nprefix < MAX_SPECIAL) sp->prefix[sp->nprefix++] = id;
        else if (after && sp->nsuffix < MAX_SPECIAL) sp->suffix[sp->nsuffix++] = id;
    }
}

ov_status_e ov_core_read_model(const ov_core_t* core, const char* model_path, const char* bin_path, ov_model_t** model) {
    (void)bin_path;
    if (!core || !model_path || !model) return INVALID_C_PARAM;
    FILE* f = fopen(model_path, "rb");
    if (!f) {
        /* The IR frontend's words, as the 2026.4.1 core says them. */
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nir: Could not open the file: \"%s\"\n",
                 model_path);
        return GENERAL_ERROR;
    }
    /* The rt_info comes last; a tokenizer's IR is tens of kilobytes (its
     * vocabulary is in the .bin). */
    size_t cap = 4 << 20;
    char* xml = malloc(cap);
    size_t len = fread(xml, 1, cap - 1, f);
    fclose(f);
    xml[len] = 0;
    int embedding = strstr(xml, "last_hidden_state") != NULL;
    int cross = !embedding && strstr(xml, "logits") && strstr(xml, "input_ids") && strstr(xml, "attention_mask");
    int types = strstr(xml, "token_type_ids") != NULL;
    /* A tokenizer's operations (StringTensorUnpack, BPETokenizer) are
     * openvino-tokenizers': without the extension the real core cannot
     * read the IR. */
    if (!embedding && !cross && !atomic_load(&core->extensions)) {
        free(xml);
        snprintf(last_err_msg, sizeof last_err_msg,
                 "Exception from ovcore_test.c:\nCannot create StringTensorUnpack layer from unsupported opset: extension\n");
        return GENERAL_ERROR;
    }
    /* The folder of the IR as named: a prompt view's tokenizer.json links
     * to the model's. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char* slash = strrchr(dir, '/');
#ifdef _WIN32
    char* back = strrchr(dir, '\\');
    if (back && (!slash || back > slash)) slash = back;
#endif
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    ovtest_vocab* vocab = NULL;
    char why[600];
    if (ovtest_vocab_open(dir, &vocab, why, sizeof why) != 0) {
        free(xml);
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\n%.400s\n", why);
        return GENERAL_ERROR;
    }
    *model = calloc(1, sizeof **model);
    read_special(xml, &(*model)->special);
    (*model)->vocab = vocab;
    (*model)->embedding = embedding;
    (*model)->cross = cross;
    (*model)->shape.inputs = types ? 3 : 2;
    for (int i = 0; i < N_INPUTS; i++) (*model)->shape.dims[i][0] = (*model)->shape.dims[i][1] = -1;
    snprintf((*model)->path, sizeof (*model)->path, "%s", model_path);
    free(xml);
    ovtest_object_created();
    return OK;
}

void ov_model_free(ov_model_t* model) {
    if (!model) return;
    ovtest_vocab_free(model->vocab);
    free(model);
    ovtest_object_freed();
}

/* An encoder model's first dynamic dimension: its input and index; 0 when
 * every input is static. */
static int first_dynamic(const struct encoder_shape* sh, int* input, int* dim) {
    for (int i = 0; i < sh->inputs; i++)
        for (int d = 0; d < 2; d++)
            if (sh->dims[i][d] < 0) {
                *input = i;
                *dim = d;
                return 1;
            }
    return 0;
}

bool ov_model_is_dynamic(const ov_model_t* model) {
    int input, dim;
    if (!model) return false;
    /* a tokenizer takes a string tensor of any length */
    return !(model->embedding || model->cross) || first_dynamic(&model->shape, &input, &dim);
}

ov_status_e ov_partial_shape_create_static(const int64_t rank, const int64_t* dims, ov_partial_shape_t* partial_shape_obj) {
    if (!partial_shape_obj || rank <= 0 || !dims) return INVALID_C_PARAM;
    partial_shape_obj->dims = calloc((size_t)rank, sizeof(ov_dimension_t));
    if (!partial_shape_obj->dims) return NOT_ALLOCATED;
    for (int64_t i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            free(partial_shape_obj->dims);
            partial_shape_obj->dims = NULL;
            return INVALID_C_PARAM;
        }
        partial_shape_obj->dims[i].min = partial_shape_obj->dims[i].max = dims[i];
    }
    partial_shape_obj->rank.min = partial_shape_obj->rank.max = rank;
    ovtest_object_created();
    return OK;
}

void ov_partial_shape_free(ov_partial_shape_t* partial_shape) {
    if (!partial_shape || !partial_shape->dims) return;
    free(partial_shape->dims);
    partial_shape->dims = NULL;
    ovtest_object_freed();
}

/* ov_model_reshape gives the named inputs their shapes, all or none (the
 * model's shapes are inferred again: inputs of one batch and length, or it
 * fails). A dimension whose min is not its max stays dynamic. */
ov_status_e ov_model_reshape(const ov_model_t* model, const char** tensor_names, const ov_partial_shape_t* partial_shapes,
                             size_t size) {
    if (!model || (size && (!tensor_names || !partial_shapes))) return INVALID_C_PARAM;
    if (!model->embedding && !model->cross) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nthe test core reshapes encoder models only\n");
        return GENERAL_ERROR;
    }
    struct encoder_shape next = model->shape;
    for (size_t k = 0; k < size; k++) {
        int i = 0;
        while (i < next.inputs && (!tensor_names[k] || strcmp(tensor_names[k], input_names[i]) != 0)) i++;
        if (i == next.inputs) {
            snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nPort for tensor name %s was not found.\n",
                     tensor_names[k] ? tensor_names[k] : "(null)");
            return GENERAL_ERROR;
        }
        const ov_partial_shape_t* ps = &partial_shapes[k];
        if (ps->rank.min != 2 || ps->rank.max != 2 || !ps->dims) {
            snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\n%s: a shape of rank 2\n", input_names[i]);
            return GENERAL_ERROR;
        }
        for (int d = 0; d < 2; d++) next.dims[i][d] = ps->dims[d].min == ps->dims[d].max ? ps->dims[d].min : -1;
    }
    for (int i = 1; i < next.inputs; i++)
        for (int d = 0; d < 2; d++)
            if (next.dims[i][d] >= 0 && next.dims[0][d] >= 0 && next.dims[i][d] != next.dims[0][d]) {
                snprintf(last_err_msg, sizeof last_err_msg,
                         "Exception from ovcore_test.c:\nshape inference: %s [%lld,%lld] does not match input_ids [%lld,%lld]\n",
                         input_names[i], (long long)next.dims[i][0], (long long)next.dims[i][1], (long long)next.dims[0][0],
                         (long long)next.dims[0][1]);
                return GENERAL_ERROR;
            }
    /* The model changes behind its const handle, as the real one's (a
     * shared_ptr to ov::Model) does. */
    ((ov_model_t*)model)->shape = next;
    return OK;
}

static atomic_int core_compile_cached;

/* 1 when the test core's last compile found its blob in CACHE_DIR. */
int64_t ovtest_core_last_compile_cached(void) { return atomic_load(&core_compile_cached); }

/* cache_blob plays the core's model cache: the first compile with
 * CACHE_DIR writes a blob named after a hash of the model, its shapes and
 * the device (OpenVINO's <hash>.blob), a later one finds it. */
static void cache_blob(const ov_model_t* model, const char* device, const char* dir) {
    uint64_t h = 1469598103934665603ULL;
    char key[1200];
    snprintf(key, sizeof key, "%s|%s|%lld,%lld", model->path, device, (long long)model->shape.dims[0][0],
             (long long)model->shape.dims[0][1]);
    for (const char* p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    char blob[2048];
    snprintf(blob, sizeof blob, "%s/%016llx.blob", dir, (unsigned long long)h);
    FILE* f = fopen(blob, "r");
    atomic_store(&core_compile_cached, f != NULL);
    if (f) {
        fclose(f);
    } else if ((f = fopen(blob, "w"))) {
        fputs("ovtest compiled model\n", f);
        fclose(f);
    }
}

ov_status_e ov_core_compile_model(const ov_core_t* core, const ov_model_t* model, const char* device_name,
                                  const size_t property_args_size, ov_compiled_model_t** compiled_model, ...) {
    if (!core || !model || !device_name || !compiled_model || property_args_size % 2) return INVALID_C_PARAM;
    const char* cache = NULL;
    va_list args;
    va_start(args, compiled_model);
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* key = va_arg(args, const char*);
        const char* value = va_arg(args, const char*);
        if (key && value && strcmp(key, "CACHE_DIR") == 0) cache = value;
    }
    va_end(args);
    int encoder = model->embedding || model->cross;
    int npu = strncmp(device_name, "NPU", 3) == 0;
    if (strcmp(device_name, "CPU") != 0 && !(encoder && (strcmp(device_name, "GPU") == 0 || npu))) {
        /* a tokenizer runs on the CPU only; an encoder model on the GPU and NPU too */
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nDevice %s cannot run a tokenizer\n",
                 device_name);
        return GENERAL_ERROR;
    }
    int input, dim;
    if (npu && first_dynamic(&model->shape, &input, &dim)) {
        /* the NPU plugin's words (model_validation.cpp) */
        snprintf(last_err_msg, sizeof last_err_msg,
                 "Exception from ovcore_test.c:\nNPU does not support models with unbounded dynamic dimensions. Parameter "
                 "'%s' has dimension [%d] with no finite upper bound (upper bound is INT64_MAX). Please reshape the model "
                 "to use static shapes before compiling for the NPU device:\n    model.reshape({<static_shape>})\n",
                 input_names[input], dim);
        return GENERAL_ERROR;
    }
    if (cache && *cache) cache_blob(model, device_name, cache);
    *compiled_model = calloc(1, sizeof **compiled_model);
    (*compiled_model)->special = model->special;
    (*compiled_model)->vocab = ovtest_vocab_ref(model->vocab);
    (*compiled_model)->embedding = model->embedding;
    (*compiled_model)->cross = model->cross;
    (*compiled_model)->shape = model->shape;
    (*compiled_model)->npu = npu;
    ovtest_object_created();
    return OK;
}

void ov_compiled_model_free(ov_compiled_model_t* compiled_model) {
    if (!compiled_model) return;
    ovtest_vocab_free(compiled_model->vocab);
    free(compiled_model);
    ovtest_object_freed();
}

ov_status_e ov_compiled_model_create_infer_request(const ov_compiled_model_t* compiled_model,
                                                   ov_infer_request_t** infer_request) {
    if (!compiled_model || !infer_request) return INVALID_C_PARAM;
    ov_infer_request_t* r = calloc(1, sizeof *r);
    r->special = compiled_model->special;
    r->vocab = ovtest_vocab_ref(compiled_model->vocab);
    r->embedding = compiled_model->embedding;
    r->cross = compiled_model->cross;
    r->shape = compiled_model->shape;
    r->npu = compiled_model->npu;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    *infer_request = r;
    ovtest_object_created();
    return OK;
}

ov_status_e ov_tensor_create_from_string_array(const char** string_array, const size_t array_size,
                                               const ov_shape_t shape, ov_tensor_t** tensor) {
    if (!string_array || !tensor || shape.rank <= 0 || shape.rank > 8 || !shape.dims) return INVALID_C_PARAM;
    struct ov_tensor* t = calloc(1, sizeof *t);
    t->type = STRING;
    t->rank = shape.rank;
    memcpy(t->dims, shape.dims, (size_t)shape.rank * sizeof(int64_t));
    if (elements(t) != array_size) {
        free(t);
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nstring array size %zu does not match the shape\n",
                 array_size);
        return GENERAL_ERROR;
    }
    t->strings = calloc(array_size ? array_size : 1, sizeof(char*));
    for (size_t i = 0; i < array_size; i++) t->strings[i] = strdup(string_array[i] ? string_array[i] : "");
    t->data = t->strings;
    *tensor = t;
    ovtest_object_created();
    return OK;
}

ov_status_e ov_tensor_set_string_data(ov_tensor_t* tensor, const char** string_array, const size_t array_size) {
    if (!tensor || !string_array || tensor->type != STRING || !tensor->strings || array_size != elements(tensor))
        return INVALID_C_PARAM;
    for (size_t i = 0; i < array_size; i++) {
        free(tensor->strings[i]);
        tensor->strings[i] = strdup(string_array[i] ? string_array[i] : "");
    }
    return OK;
}

ov_status_e ov_infer_request_set_input_tensor_by_index(ov_infer_request_t* infer_request, const size_t idx,
                                                       const ov_tensor_t* tensor) {
    if (!infer_request || !tensor) return INVALID_C_PARAM;
    if (idx != 0 || tensor->type != STRING || elements(tensor) != 1) {
        snprintf(last_err_msg, sizeof last_err_msg,
                 "Exception from ovcore_test.c:\nthe tokenizer takes one string at input 0\n");
        return GENERAL_ERROR;
    }
    pthread_mutex_lock(&infer_request->mu);
    ov_status_e st = OK;
    if (infer_request->running) {
        st = REQUEST_BUSY;
    } else {
        free(infer_request->input);
        infer_request->input = strdup(tensor->strings[0]);
    }
    pthread_mutex_unlock(&infer_request->mu);
    return st;
}

ov_status_e ov_infer_request_set_tensor(ov_infer_request_t* infer_request, const char* tensor_name,
                                       const ov_tensor_t* tensor) {
    if (!infer_request || !tensor_name || !tensor) return INVALID_C_PARAM;
    ov_infer_request_t* r = infer_request;
    int input = 0;
    while (input < r->shape.inputs && strcmp(tensor_name, input_names[input]) != 0) input++;
    if (!(r->embedding || r->cross) || input == r->shape.inputs) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nPort for tensor name %s was not found.\n",
                 tensor_name);
        return GENERAL_ERROR;
    }
    if (tensor->type != I64 || tensor->rank != 2) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\n%s: an I64 tensor of rank 2\n", tensor_name);
        return GENERAL_ERROR;
    }
    const int64_t* want = r->shape.dims[input];
    if (want[0] >= 0 && want[1] >= 0 && (tensor->dims[0] != want[0] || tensor->dims[1] != want[1])) {
        if (r->npu) /* check_tensor's words (sync_infer_request.cpp) */
            snprintf(last_err_msg, sizeof last_err_msg,
                     "Exception from ovcore_test.c:\nFailed to set tensor. The input tensor size is not equal to the model input "
                     "type: got [%lld,%lld] expecting [%lld,%lld].\n",
                     (long long)tensor->dims[0], (long long)tensor->dims[1], (long long)want[0], (long long)want[1]);
        else /* the CPU plugin's */
            snprintf(last_err_msg, sizeof last_err_msg,
                     "Exception from ovcore_test.c:\nCan't set the input tensor with index: %d, because the model input "
                     "(shape=[%lld,%lld]) and the tensor (shape=(%lld.%lld)) are incompatible\n",
                     input, (long long)want[0], (long long)want[1], (long long)tensor->dims[0], (long long)tensor->dims[1]);
        return GENERAL_ERROR;
    }
    pthread_mutex_lock(&r->mu);
    ov_status_e st = OK;
    if (r->running) {
        st = REQUEST_BUSY;
    } else {
        int64_t** into = input == IN_IDS ? &r->emb_ids : input == IN_MASK ? &r->emb_mask : &r->emb_types;
        free(*into);
        if (input == IN_IDS) {
            r->rows = tensor->dims[0];
            r->cols = tensor->dims[1];
        }
        *into = malloc((elements(tensor) ? elements(tensor) : 1) * sizeof(int64_t));
        memcpy(*into, tensor->data, elements(tensor) * sizeof(int64_t));
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* The first and last input_ids of the first row of the last encoder
 * inference (where a padded batch put its tokens). */
static atomic_llong row0_first, row0_last;

int64_t ovtest_core_last_row0_first(void) { return atomic_load(&row0_first); }
int64_t ovtest_core_last_row0_last(void) { return atomic_load(&row0_last); }

static void note_row0(const ov_infer_request_t* r) {
    if (r->rows < 1 || r->cols < 1) return;
    atomic_store(&row0_first, r->emb_ids[0]);
    atomic_store(&row0_last, r->emb_ids[r->cols - 1]);
}

/* publish_output ends an encoder's inference with its output (owned by
 * the request from here on) and wakes whoever waits for it. */
static void publish_output(ov_infer_request_t* r, float* out) {
    pthread_mutex_lock(&r->mu);
    free(r->hidden);
    r->hidden = out;
    r->result = OK;
    r->running = 0;
    atomic_fetch_sub(&tokenizer_running, 1);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* cross_thread runs a cross-encoder: one logit a row, from the tokens its
 * mask keeps (with their types when set); the mask must be as long as the
 * ids, as the model's shape inference would insist. */
static void cross_thread(ov_infer_request_t* r) {
    note_row0(r);
    float* logits = malloc((r->rows ? (size_t)r->rows : 1) * sizeof(float));
    for (int64_t row = 0; row < r->rows; row++) {
        double sum = 0;
        int64_t n = 0;
        for (int64_t c = 0; c < r->cols; c++) {
            size_t i = (size_t)(row * r->cols + c);
            if (r->emb_mask && !r->emb_mask[i]) continue;
            sum += ovtest_logit_term(r->emb_ids[i], r->emb_types ? r->emb_types[i] : 0);
            n++;
        }
        logits[row] = n ? (float)(sum / (double)n) : 0.0f;
    }
    publish_output(r, logits);
}

/* embed_thread runs an embedding model: each token's hidden state. */
static void embed_thread(ov_infer_request_t* r) {
    note_row0(r);
    size_t n = (size_t)(r->rows * r->cols);
    float* hidden = malloc((n ? n : 1) * OVTEST_EMBED_WIDTH * sizeof(float));
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < OVTEST_EMBED_WIDTH; k++) hidden[i * OVTEST_EMBED_WIDTH + k] = ovtest_hidden(r->emb_ids[i], k);
    publish_output(r, hidden);
}

static void* infer_thread(void* arg) {
    ov_infer_request_t* r = arg;
    if (r->embedding) {
        embed_thread(r);
        return NULL;
    }
    if (r->cross) {
        cross_thread(r);
        return NULL;
    }
    /* input is not changed while running (set_input answers busy). */
    const char* text = r->input;
    int64_t* ids = NULL;
    size_t n = 0;
    if (strstr(text, "OVTEST_HANG_TOKENIZE")) {
        pthread_mutex_lock(&r->mu);
        while (!r->cancelled) pthread_cond_wait(&r->cv, &r->mu);
        pthread_mutex_unlock(&r->mu);
    } else {
        /* A text has at most as many tokens as bytes. */
        size_t cap = strlen(text);
        ids = malloc((r->special.nprefix + cap + r->special.nsuffix + 1) * sizeof *ids);
        memcpy(ids, r->special.prefix, r->special.nprefix * sizeof *ids);
        size_t tokens = ovtest_tokenize(r->vocab, text, ids + r->special.nprefix, cap);
        memcpy(ids + r->special.nprefix + tokens, r->special.suffix, r->special.nsuffix * sizeof *ids);
        n = r->special.nprefix + tokens + r->special.nsuffix;
    }
    pthread_mutex_lock(&r->mu);
    free(r->ids);
    r->ids = NULL;
    r->n = 0;
    if (r->cancelled) {
        free(ids);
        r->result = INFER_CANCELLED;
        atomic_fetch_add(&tokenizer_cancelled, 1);
    } else {
        r->ids = ids;
        r->n = n;
        r->result = OK;
    }
    r->running = 0;
    atomic_fetch_sub(&tokenizer_running, 1);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* finish waits up to timeout_ms (negative: for ever) for the running
 * inference; with r->mu held. */
static ov_status_e finish(ov_infer_request_t* r, int64_t timeout_ms) {
    if (timeout_ms < 0) {
        while (r->running) pthread_cond_wait(&r->cv, &r->mu);
    } else if (r->running) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (r->running && pthread_cond_timedwait(&r->cv, &r->mu, &until) == 0) {
        }
        if (r->running) return RESULT_NOT_READY;
    }
    if (r->joinable) {
        pthread_join(r->thread, NULL);
        r->joinable = 0;
    }
    if (r->result == INFER_CANCELLED)
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nInfer Request was canceled\n");
    return r->result;
}

ov_status_e ov_infer_request_start_async(ov_infer_request_t* infer_request) {
    if (!infer_request) return INVALID_C_PARAM;
    ov_infer_request_t* r = infer_request;
    pthread_mutex_lock(&r->mu);
    ov_status_e st = OK;
    if (r->running) {
        st = REQUEST_BUSY;
    } else if (r->embedding || r->cross ? !r->emb_ids : !r->input) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nthe input tensor is not set\n");
        st = GENERAL_ERROR;
    } else {
        if (r->joinable) pthread_join(r->thread, NULL);
        r->cancelled = 0;
        r->running = 1;
        r->joinable = 1;
        atomic_fetch_add(&tokenizer_running, 1);
        if (pthread_create(&r->thread, NULL, infer_thread, r) != 0) {
            r->running = r->joinable = 0;
            atomic_fetch_sub(&tokenizer_running, 1);
            st = GENERAL_ERROR;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

ov_status_e ov_infer_request_infer(ov_infer_request_t* infer_request) {
    ov_status_e st = ov_infer_request_start_async(infer_request);
    return st == OK ? ov_infer_request_wait(infer_request) : st;
}

ov_status_e ov_infer_request_wait_for(ov_infer_request_t* infer_request, const int64_t timeout) {
    if (!infer_request) return INVALID_C_PARAM;
    pthread_mutex_lock(&infer_request->mu);
    ov_status_e st = finish(infer_request, timeout < 0 ? 0 : timeout);
    pthread_mutex_unlock(&infer_request->mu);
    return st;
}

ov_status_e ov_infer_request_wait(ov_infer_request_t* infer_request) {
    if (!infer_request) return INVALID_C_PARAM;
    pthread_mutex_lock(&infer_request->mu);
    ov_status_e st = finish(infer_request, -1);
    pthread_mutex_unlock(&infer_request->mu);
    return st;
}

ov_status_e ov_infer_request_cancel(ov_infer_request_t* infer_request) {
    if (!infer_request) return INVALID_C_PARAM;
    pthread_mutex_lock(&infer_request->mu);
    if (infer_request->running) infer_request->cancelled = 1;
    pthread_cond_broadcast(&infer_request->cv);
    pthread_mutex_unlock(&infer_request->mu);
    return OK;
}

ov_status_e ov_infer_request_get_tensor(const ov_infer_request_t* infer_request, const char* tensor_name,
                                        ov_tensor_t** tensor) {
    if (!infer_request || !tensor_name || !tensor) return INVALID_C_PARAM;
    ov_infer_request_t* r = (ov_infer_request_t*)infer_request;
    if (r->embedding && strcmp(tensor_name, "last_hidden_state") == 0) {
        pthread_mutex_lock(&r->mu);
        ov_status_e st = r->running ? REQUEST_BUSY : OK;
        if (st == OK && !r->hidden) {
            snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nno inference has run\n");
            st = GENERAL_ERROR;
        }
        if (st == OK) {
            int64_t dims[3] = {r->rows, r->cols, OVTEST_EMBED_WIDTH};
            ov_shape_t shape = {3, dims};
            if ((st = tensor_new(F32, shape, NULL, tensor)) == OK)
                memcpy((*tensor)->data, r->hidden, (size_t)(r->rows * r->cols) * OVTEST_EMBED_WIDTH * sizeof(float));
        }
        pthread_mutex_unlock(&r->mu);
        return st;
    }
    if (r->cross && strcmp(tensor_name, "logits") == 0) {
        pthread_mutex_lock(&r->mu);
        ov_status_e st = r->running ? REQUEST_BUSY : OK;
        if (st == OK && !r->hidden) {
            snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nno inference has run\n");
            st = GENERAL_ERROR;
        }
        if (st == OK) {
            int64_t dims[2] = {r->rows, 1};
            ov_shape_t shape = {2, dims};
            if ((st = tensor_new(F32, shape, NULL, tensor)) == OK)
                memcpy((*tensor)->data, r->hidden, (size_t)r->rows * sizeof(float));
        }
        pthread_mutex_unlock(&r->mu);
        return st;
    }
    int ids = strcmp(tensor_name, "input_ids") == 0;
    if (!ids && strcmp(tensor_name, "attention_mask") != 0) {
        snprintf(last_err_msg, sizeof last_err_msg, "Exception from ovcore_test.c:\nPort for tensor name %s was not found.\n",
                 tensor_name);
        return GENERAL_ERROR;
    }
    pthread_mutex_lock(&r->mu);
    ov_status_e st = OK;
    if (r->running) {
        st = REQUEST_BUSY;
    } else {
        int64_t dims[2] = {1, (int64_t)r->n};
        ov_shape_t shape = {2, dims};
        st = tensor_new(I64, shape, NULL, tensor);
        if (st == OK) {
            int64_t* data = (*tensor)->data;
            for (size_t i = 0; i < r->n; i++) data[i] = ids ? r->ids[i] : 1;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

void ov_infer_request_free(ov_infer_request_t* infer_request) {
    if (!infer_request) return;
    ov_infer_request_cancel(infer_request);
    ov_infer_request_wait(infer_request);
    pthread_mutex_destroy(&infer_request->mu);
    pthread_cond_destroy(&infer_request->cv);
    free(infer_request->input);
    free(infer_request->ids);
    ovtest_vocab_free(infer_request->vocab);
    free(infer_request->emb_ids);
    free(infer_request->emb_mask);
    free(infer_request->emb_types);
    free(infer_request->hidden);
    free(infer_request);
    ovtest_object_freed();
}
