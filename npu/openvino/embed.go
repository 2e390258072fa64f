//go:build cgo

package openvino

/*
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ovapi.h"

// An embedding or rerank model on OpenVINO's core (npud_core_model,
// ovapi.h): its own core, the compiled IR and its one infer request.
typedef npud_core_model npud_emb;

// npud_emb_open reads the IR at xml and compiles it for device, on one
// thread (a failure's message is per thread), as npud_core_model_open does
// a tokenizer. With rows > 0 the inputs (names[0..ninputs)) are first
// reshaped to the static [rows, cols] the NPU needs, and the model must
// then be static; with rows 0 it keeps its shapes as exported (dynamic),
// as GenAI's TextEmbeddingPipeline compiles on CPU and GPU. It is
// compiled with nprops (at most 2) properties, keys[i] set to values[i]
// (ov_core_compile_model counts two arguments a property: key, value).
static ov_status_e npud_emb_open(const npud_ov_api* api, const char* xml, const char* device, int64_t rows,
                                 int64_t cols, const char** names, size_t ninputs, const char** keys,
                                 const char** values, size_t nprops, npud_emb* m, const char** step, char* msg,
                                 size_t len) {
    ov_status_e st;
    ov_model_t* model = NULL;
    msg[0] = 0;
    *step = "ov_core_create";
    if ((st = api->ov_core_create(&m->core)) != OK) goto fail;
    *step = "ov_core_read_model";
    if ((st = api->tok.ov_core_read_model(m->core, xml, NULL, &model)) != OK) goto fail;
    if (rows > 0) {
        ov_partial_shape_t shapes[4];
        int64_t dims[2] = {rows, cols};
        size_t made = 0;
        *step = "ov_partial_shape_create_static";
        if (ninputs > 4) {
            st = INVALID_C_PARAM;
            goto fail;
        }
        for (; made < ninputs; made++)
            if ((st = api->emb.ov_partial_shape_create_static(2, dims, &shapes[made])) != OK) break;
        if (st == OK) {
            *step = "ov_model_reshape";
            st = api->emb.ov_model_reshape(model, names, shapes, ninputs);
        }
        for (size_t i = 0; i < made; i++) api->emb.ov_partial_shape_free(&shapes[i]);
        if (st != OK) goto fail;
        *step = "ov_model_is_dynamic";
        if (api->emb.ov_model_is_dynamic(model)) {
            snprintf(msg, len, "the model still has dynamic shapes with its inputs at [%lld, %lld]", (long long)rows,
                     (long long)cols);
            st = GENERAL_ERROR;
            goto failed;
        }
    }
    *step = "ov_core_compile_model";
    if (nprops > 2) {
        st = INVALID_C_PARAM;
        goto fail;
    }
    npud_sigstack own;
    npud_sigstack_save(&own);
    if (nprops == 2)
        st = api->tok.ov_core_compile_model(m->core, model, device, 4, &m->compiled, keys[0], values[0], keys[1],
                                            values[1]);
    else if (nprops == 1)
        st = api->tok.ov_core_compile_model(m->core, model, device, 2, &m->compiled, keys[0], values[0]);
    else
        st = api->tok.ov_core_compile_model(m->core, model, device, 0, &m->compiled);
    npud_sigstack_restore(&own);
    if (st != OK) goto fail;
    api->tok.ov_model_free(model);
    model = NULL;
    *step = "ov_compiled_model_create_infer_request";
    if ((st = api->tok.ov_compiled_model_create_infer_request(m->compiled, &m->request)) != OK) goto fail;
    return OK;
fail:
    npud_core_last_err(api, msg, len); // before ov_core_free, which clears it
failed:
    if (model) api->tok.ov_model_free(model);
    npud_core_model_close(api, m);
    return st;
}

// npud_emb_set sets the input name to a [rows, cols] I64 tensor holding a
// copy of data (the request keeps a reference to the tensor).
static ov_status_e npud_emb_set(const npud_ov_api* api, npud_emb* e, const char* name, const int64_t* data,
                                int64_t rows, int64_t cols, const char** step, char* msg, size_t len) {
    ov_status_e st;
    int64_t dims[2] = {rows, cols};
    ov_shape_t shape = {0};
    ov_tensor_t* tensor = NULL;
    void* dst = NULL;
    *step = "ov_shape_create";
    if ((st = api->tok.ov_shape_create(2, dims, &shape)) != OK) goto fail;
    *step = "ov_tensor_create";
    st = api->emb.ov_tensor_create(I64, shape, &tensor);
    api->tok.ov_shape_free(&shape);
    if (st != OK) goto fail;
    *step = "ov_tensor_data";
    if ((st = api->tok.ov_tensor_data(tensor, &dst)) != OK) goto fail;
    memcpy(dst, data, (size_t)(rows * cols) * sizeof(int64_t));
    *step = "ov_infer_request_set_tensor";
    st = api->emb.ov_infer_request_set_tensor(e->request, name, tensor);
    api->tok.ov_tensor_free(tensor);
    tensor = NULL;
    if (st != OK) goto fail;
    return OK;
fail:
    npud_core_last_err(api, msg, len);
    if (tensor) api->tok.ov_tensor_free(tensor);
    return st;
}

static ov_status_e npud_emb_start(const npud_ov_api* api, npud_emb* e, char* msg, size_t len) {
    ov_status_e st = api->tok.ov_infer_request_start_async(e->request);
    if (st != OK) npud_core_last_err(api, msg, len);
    return st;
}

static ov_status_e npud_emb_wait_for(const npud_ov_api* api, npud_emb* e, int64_t ms, char* msg, size_t len) {
    ov_status_e st = api->tok.ov_infer_request_wait_for(e->request, ms);
    if (st != OK && st != RESULT_NOT_READY) npud_core_last_err(api, msg, len);
    return st;
}

static void npud_emb_cancel(const npud_ov_api* api, npud_emb* e) {
    api->tok.ov_infer_request_cancel(e->request);
    api->tok.ov_infer_request_wait(e->request);
}

// npud_emb_output reads the output name, an F32 tensor of rank (at most
// 3): its dims into dims, and its values into out when cap holds them all.
// An embedding model's is [batch, length, hidden], a cross-encoder's
// [batch, classes].
static ov_status_e npud_emb_output(const npud_ov_api* api, npud_emb* e, const char* name, int rank, float* out,
                                   size_t cap, int64_t* dims, const char** step, char* msg, size_t len) {
    ov_status_e st;
    ov_tensor_t* t = NULL;
    ov_shape_t shape = {0};
    ov_element_type_e type;
    void* data = NULL;
    *step = "ov_infer_request_get_tensor";
    if ((st = api->tok.ov_infer_request_get_tensor(e->request, name, &t)) != OK) goto fail;
    *step = "ov_tensor_get_element_type";
    if ((st = api->tok.ov_tensor_get_element_type(t, &type)) != OK) goto fail;
    *step = "the output: F32";
    if (type != F32) {
        st = GENERAL_ERROR;
        goto fail;
    }
    *step = "ov_tensor_get_shape";
    if ((st = api->tok.ov_tensor_get_shape(t, &shape)) != OK) goto fail;
    *step = rank == 3 ? "the output: a shape of [batch, length, hidden]" : "the output: a shape of [batch, classes]";
    if (rank < 1 || rank > 3 || shape.rank != rank) {
        api->tok.ov_shape_free(&shape);
        st = GENERAL_ERROR;
        goto fail;
    }
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape.dims[i] < 0) {
            api->tok.ov_shape_free(&shape);
            st = GENERAL_ERROR;
            goto fail;
        }
        dims[i] = shape.dims[i];
        n *= (size_t)shape.dims[i];
    }
    api->tok.ov_shape_free(&shape);
    if (n <= cap) {
        *step = "ov_tensor_data";
        if ((st = api->tok.ov_tensor_data(t, &data)) != OK) goto fail;
        memcpy(out, data, n * sizeof(float));
    }
    api->tok.ov_tensor_free(t);
    return OK;
fail:
    npud_core_last_err(api, msg, len);
    if (t) api->tok.ov_tensor_free(t);
    return st;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// ErrEmbeddingsUnsupported is wrapped when OpenVINO's core C library lacks
// a function an embedding model needs.
var ErrEmbeddingsUnsupported = errors.New("OpenVINO's core C library cannot run an embedding model")

// embedding's bounds on one inference: the texts in it and the tokens of
// its padded batch (texts × the longest). A request with more runs as
// several inferences, in order.
const (
	maxEmbedBatch       = 32
	maxEmbedBatchTokens = 16384
	// defaultEmbedMaxLength is where a text is truncated when the model's
	// folder does not say its length (no max_position_embeddings).
	defaultEmbedMaxLength = 8192
)

// The static shape an embedding or rerank model is compiled with for the
// NPU, whose compiler takes no dynamic dimension. GenAI's NPU embedding
// pipeline reshapes to [batch_size, max_length] when both are configured
// with pad_to_max_length (src/cpp/src/rag/npu/text_embedding_pipeline.cpp,
// reshape_model in text_embedding_utils.cpp) and leaves choosing them to
// its user; npud chooses:
//   - npuEmbedBatch texts an inference: every inference costs the whole
//     batch, so a single query (what a RAG lookup sends) wastes at most 3
//     padding rows, and indexing documents still runs 4 at a time;
//   - the model's own length (max_position_embeddings, or
//     sentence-transformers' max_seq_length), at most npuEmbedMaxLength:
//     BERT-sized encoders (bge, MiniLM) take 512 anyway, and a model that
//     claims 32768 (Qwen3-Embedding) would make every padded row cost
//     that many positions. A text is truncated there (a pair longer is
//     refused), as on other devices at the model's length.
const (
	npuEmbedBatch     = 4
	npuEmbedMaxLength = 512
)

// embedShape is a static [rows, length] of a compiled model's inputs;
// zero: its shapes as exported (dynamic).
type embedShape struct{ rows, length int }

// embedOptions are how the library compiles embedding and rerank models,
// beyond the device.
type embedOptions struct {
	cacheDir string // CACHE_DIR, as the engine gives its LLMs
	// forceStatic compiles with the NPU's static shapes on any device: the
	// real runtime's CPU plugin checks the reshape where no NPU is.
	forceStatic bool
	// precision is INFERENCE_PRECISION_HINT, "" for the plugin's default.
	// Only tests set it: on a CPU with bf16 (AMX) the CPU plugin computes
	// in bf16 by default, rounding differently for static and dynamic
	// shapes (up to 3e-2 apart on the tiny model; equal in f32).
	precision string
}

// compilingEmbeddings is the library compiling embedding and rerank models
// with opts: a copy, so that the shared library never changes and
// openReranker's own call of openEmbedder sees them.
func (l *Library) compilingEmbeddings(opts embedOptions) *Library {
	c := *l
	c.embed = opts
	return &c
}

// embeddingSupport is why the library cannot run embedding models, nil
// when it can: the core's tokenizer and embedding functions, and
// openvino-tokenizers for the model's tokenizer.
func (l *Library) embeddingSupport() error {
	if l.api.tokenizer_missing != nil {
		return fmt.Errorf("%w: it lacks %s", ErrEmbeddingsUnsupported, C.GoString(l.api.tokenizer_missing))
	}
	if l.api.embed_missing != nil {
		return fmt.Errorf("%w: it lacks %s", ErrEmbeddingsUnsupported, C.GoString(l.api.embed_missing))
	}
	if l.TokenizersErr != nil {
		return l.TokenizersErr
	}
	if l.TokenizersFile == "" {
		return fmt.Errorf("%w (set %s to it)", ErrTokenizersNotFound, EnvTokenizersPath)
	}
	return nil
}

// embedder is an embedding model compiled on OpenVINO's core with its own
// tokenizer: what GenAI's TextEmbeddingPipeline does (openvino.genai
// src/cpp/src/rag/text_embedding_pipeline.cpp), through the C API.
type embedder struct {
	api *C.npud_ov_api
	dir string
	ir  modelstore.EmbeddingIR
	cfg modelstore.EmbeddingConfig
	tok *ModelTokenizer
	// static is the shape the model was compiled with (the NPU's), zero
	// when dynamic: infer pads every batch to it.
	static embedShape
	// slot holds the native model while no inference runs: taking it is
	// the lock; nil once closed.
	slot chan *C.npud_emb
}

// openEmbedder compiles the embedding model in dir for device, and its
// tokenizer on the CPU: with its shapes as exported, or on the NPU (or
// with l's forceStatic) reshaped to the static [npuEmbedBatch, length].
func (l *Library) openEmbedder(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*embedder, error) {
	if err := l.embeddingSupport(); err != nil {
		return nil, err
	}
	cfg, err := modelstore.ReadEmbeddingConfig(dir)
	if err != nil {
		return nil, err
	}
	if cfg.MaxLength <= 0 {
		cfg.MaxLength = defaultEmbedMaxLength
	}
	var static embedShape
	if deviceKind(device) == "NPU" || l.embed.forceStatic {
		static = embedShape{rows: npuEmbedBatch, length: min(cfg.MaxLength, npuEmbedMaxLength)}
		cfg.MaxLength = static.length
	}
	tok, err := l.OpenTokenizer(ctx, dir, TokenizerOptions{})
	if err != nil {
		return nil, err
	}
	native, err := l.compileEmbedding(filepath.Join(dir, "openvino_model.xml"), device, ir, static)
	if err != nil {
		_ = tok.Close()
		return nil, err
	}
	e := &embedder{api: l.api, dir: dir, ir: ir, cfg: cfg, tok: tok, static: static, slot: make(chan *C.npud_emb, 1)}
	e.slot <- native
	return e, nil
}

// compileEmbedding reads the IR at xml and compiles it for device, its
// inputs reshaped to static when static is not zero, with the library's
// CACHE_DIR: the model and its infer request.
func (l *Library) compileEmbedding(xml, device string, ir modelstore.EmbeddingIR, static embedShape) (*C.npud_emb, error) {
	names := []string{"input_ids", "attention_mask"}
	if ir.HasInput("token_type_ids") {
		names = append(names, "token_type_ids")
	}
	cnames := make([]*C.char, len(names))
	for i, n := range names {
		cnames[i] = C.CString(n)
		defer C.free(unsafe.Pointer(cnames[i]))
	}
	var keys, values []*C.char
	for _, p := range []property{{"CACHE_DIR", l.embed.cacheDir}, {"INFERENCE_PRECISION_HINT", l.embed.precision}} {
		if p.value != "" {
			k, v := C.CString(p.key), C.CString(p.value)
			defer C.free(unsafe.Pointer(k))
			defer C.free(unsafe.Pointer(v))
			keys, values = append(keys, k), append(values, v)
		}
	}
	keys, values = append(keys, nil), append(values, nil) // never empty: &keys[0] below
	cxml, cdev := C.CString(xml), C.CString(device)
	defer C.free(unsafe.Pointer(cxml))
	defer C.free(unsafe.Pointer(cdev))
	// The strings are C memory (C.CString), so the arrays of their
	// pointers may be Go memory passed to C.
	native := (*C.npud_emb)(C.calloc(1, C.sizeof_npud_emb))
	if native == nil {
		return nil, errors.New("opening the embedding model: out of memory")
	}
	var step *C.char
	var msg [1024]C.char
	st := C.npud_emb_open(l.api, cxml, cdev, C.int64_t(static.rows), C.int64_t(static.length), &cnames[0], C.size_t(len(cnames)),
		&keys[0], &values[0], C.size_t(len(keys)-1), native, &step, &msg[0], C.size_t(len(msg)))
	if st != C.OK {
		C.free(unsafe.Pointer(native))
		err := check(l.api, C.GoString(step), xml, st)
		if text := coreMessage(C.GoString(&msg[0])); text != "" {
			err = fmt.Errorf("%w: %s", err, text)
		}
		if static.rows > 0 {
			return nil, fmt.Errorf("static shapes [%d, %d] on %s: %w", static.rows, static.length, device, err)
		}
		return nil, err
	}
	return native, nil
}

// coreMessage is the core's message without the lines naming OpenVINO's
// source files ("Exception from …"), on one line: a plugin's refusal to
// compile may take several (the NPU's names the input, then how to
// reshape it).
func coreMessage(msg string) string {
	var keep []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "Exception from ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, " ")
}

// close frees the model and its tokenizer once the inference running (if
// any) ends.
func (e *embedder) close() error {
	native := <-e.slot
	e.slot <- nil
	if native == nil {
		return errors.New("the embedding model is closed")
	}
	C.npud_core_model_close(e.api, native)
	C.free(unsafe.Pointer(native))
	return e.tok.Close()
}

// tokens are the ids the model is given for text: the tokenizer's, with
// the special tokens it adds around every text (GenAI's
// TextEmbeddingPipeline encodes with add_special_tokens left at its
// default, true). A text whose ids do not fit maxLength is cut to fit, as
// a tokenizer truncating on the right does (GenAI passes truncation=true),
// when truncate is set, and refused (a TooLongInputError) when not.
func (e *embedder) tokens(ctx context.Context, text string, truncate bool) (ids []int64, cut bool, err error) {
	content, err := e.tok.Encode(ctx, text)
	if err != nil {
		return nil, false, err
	}
	specials := len(e.tok.prefix) + len(e.tok.suffix)
	room := e.cfg.MaxLength - specials
	if room < 0 {
		return nil, false, fmt.Errorf("%s: the model takes %d tokens, fewer than the %d special tokens its tokenizer adds", e.dir, e.cfg.MaxLength, specials)
	}
	if len(content) > room {
		if !truncate {
			return nil, false, &TooLongInputError{Tokens: len(content) + specials, Max: e.cfg.MaxLength}
		}
		content, cut = content[:room], true
	}
	ids = make([]int64, 0, len(content)+specials)
	ids = append(append(append(ids, e.tok.prefix...), content...), e.tok.suffix...)
	return ids, cut, nil
}

// TooLongInputError is an input longer than the embedding model takes,
// which the request did not allow npud to cut.
type TooLongInputError struct {
	Index, Tokens, Max int
}

func (e *TooLongInputError) Error() string {
	return fmt.Sprintf("input %d is %d tokens, more than the model's %d (allow truncation to cut it)", e.Index, e.Tokens, e.Max)
}

// embed returns one vector per input, in order, the tokens the model was
// given (after truncation, special tokens included) and how many inputs
// were cut (only when truncate allows it).
func (e *embedder) embed(ctx context.Context, inputs []string, truncate bool) (npu.Embedded, error) {
	seqs := make([][]int64, len(inputs))
	total, truncated := 0, 0
	for i, text := range inputs {
		ids, cut, err := e.tokens(ctx, text, truncate)
		var long *TooLongInputError
		if errors.As(err, &long) {
			long.Index = i
			return npu.Embedded{}, long
		}
		if err != nil {
			return npu.Embedded{}, fmt.Errorf("input %d: %w", i, err)
		}
		if len(ids) == 0 {
			return npu.Embedded{}, &emptyInputError{index: i}
		}
		if cut {
			truncated++
		}
		seqs[i] = ids
		total += len(ids)
	}
	out := make([][]float32, 0, len(inputs))
	for start := 0; start < len(seqs); {
		end, longest := start, 0
		for end < len(seqs) && end-start < maxEmbedBatch && (end-start+1)*max(longest, len(seqs[end])) <= maxEmbedBatchTokens {
			longest = max(longest, len(seqs[end]))
			end++
		}
		if end == start { // one text over the token budget alone: run it alone
			longest, end = len(seqs[start]), start+1
		}
		vecs, err := e.run(ctx, seqs[start:end], longest)
		if err != nil {
			return npu.Embedded{}, err
		}
		out = append(out, vecs...)
		start = end
	}
	return npu.Embedded{Vectors: out, PromptTokens: total, Truncated: truncated}, nil
}

// emptyInputError is a text that the tokenizer turns into no tokens: the
// model has nothing to embed.
type emptyInputError struct{ index int }

func (e *emptyInputError) Error() string {
	return fmt.Sprintf("input %d has no tokens to embed", e.index)
}

// run embeds one batch: ids padded on the right to length with mask 0
// (the model ignores them, as it does GenAI's padding), token_type_ids
// all 0 where the model takes them (as GenAI fills them), then pooled.
func (e *embedder) run(ctx context.Context, seqs [][]int64, length int) ([][]float32, error) {
	rows := len(seqs)
	ids := make([]int64, rows*length)
	mask := make([]int64, rows*length)
	for r, s := range seqs {
		copy(ids[r*length:], s)
		for c := range s {
			mask[r*length+c] = 1
		}
	}
	var types []int64
	if e.ir.HasInput("token_type_ids") {
		types = make([]int64, len(ids))
	}
	hidden, dims, err := e.infer(ctx, ids, mask, types, rows, length, modelstore.EmbeddingOutput, 3)
	if err != nil {
		return nil, err
	}
	if int(dims[0]) != rows || int(dims[1]) != length {
		return nil, fmt.Errorf("%s: %s has shape %v for a batch of %d × %d", e.dir, modelstore.EmbeddingOutput, dims, rows, length)
	}
	return pool(hidden, mask, rows, length, int(dims[2]), e.cfg), nil
}

// infer takes the model (waiting for the inference running, if any), sets
// the inputs ([rows, length] each; token_type_ids when types is not nil),
// runs the model (waiting in slices, cancelled when ctx ends) and reads
// its output of rank rank: the values and the dims. A model compiled with
// static shapes (the NPU's) runs the batch in parts of its shape
// (inferStatic); the values and dims are the batch's all the same.
func (e *embedder) infer(ctx context.Context, ids, mask, types []int64, rows, length int, output string, rank int) ([]float32, [3]int64, error) {
	var dims [3]int64
	if ctx.Err() != nil {
		return nil, dims, context.Cause(ctx)
	}
	var native *C.npud_emb
	select {
	case native = <-e.slot:
	case <-ctx.Done():
		return nil, dims, context.Cause(ctx)
	}
	if native == nil {
		e.slot <- nil
		return nil, dims, errors.New("the model is closed")
	}
	defer func() { e.slot <- native }()
	if e.static.rows > 0 {
		return e.inferStatic(ctx, native, ids, mask, types, rows, length, output, rank)
	}
	return e.inferOnce(ctx, native, ids, mask, types, rows, length, output, rank)
}

// inferStatic runs a [rows, length] batch on a model compiled for the
// static [B, L]: in parts of at most B rows, each padded to [B, L] with id
// 0, mask 0 and token type 0 (whole rows of them past the batch's), as
// GenAI's tokenizer pads to max_length with pad_to_max_length. The
// padding goes on the side the batch's own went (left when a row's mask
// starts with 0 and ends with 1, else right), so every real token keeps
// its distance from the row's end or start. Of each output it keeps the
// real rows and, of a [batch, length, hidden] one, the real positions.
func (e *embedder) inferStatic(ctx context.Context, native *C.npud_emb, ids, mask, types []int64, rows, length int, output string, rank int) ([]float32, [3]int64, error) {
	var dims [3]int64
	b, l := e.static.rows, e.static.length
	if rows < 1 || length < 1 || len(ids) != rows*length || len(mask) != rows*length {
		return nil, dims, fmt.Errorf("%s: a batch of %d × %d with %d ids and %d mask values", e.dir, rows, length, len(ids), len(mask))
	}
	if length > l {
		return nil, dims, fmt.Errorf("%s: a batch of %d tokens a row, more than the %d the model was compiled for", e.dir, length, l)
	}
	off := 0 // where a row's tokens start in the padded row
	for r := range rows {
		if mask[r*length] == 0 && mask[r*length+length-1] != 0 {
			off = l - length
			break
		}
	}
	pad := func(src []int64, start, n int) []int64 {
		if src == nil {
			return nil
		}
		out := make([]int64, b*l)
		for r := range n {
			copy(out[r*l+off:], src[(start+r)*length:(start+r+1)*length])
		}
		return out
	}
	var values []float32
	for start := 0; start < rows; start += b {
		if ctx.Err() != nil {
			return nil, dims, fmt.Errorf("embedding: %w", context.Cause(ctx))
		}
		n := min(b, rows-start)
		part, got, err := e.inferOnce(ctx, native, pad(ids, start, n), pad(mask, start, n), pad(types, start, n), b, l, output, rank)
		if err != nil {
			return nil, dims, err
		}
		if int(got[0]) != b || (rank == 3 && int(got[1]) != l) {
			return nil, dims, fmt.Errorf("%s: %s has shape %v for a batch of %d × %d", e.dir, output, got[:rank], b, l)
		}
		if rank == 3 {
			hidden := int(got[2])
			for r := range n {
				row := part[r*l*hidden:]
				values = append(values, row[off*hidden:(off+length)*hidden]...)
			}
		} else {
			values = append(values, part[:n*(len(part)/b)]...)
		}
		dims = got
	}
	dims[0] = int64(rows)
	if rank == 3 {
		dims[1] = int64(length)
	}
	return values, dims, nil
}

// inferOnce runs one inference of the [rows, length] batch on native,
// which the caller holds (infer).
func (e *embedder) inferOnce(ctx context.Context, native *C.npud_emb, ids, mask, types []int64, rows, length int, output string, rank int) ([]float32, [3]int64, error) {
	var dims [3]int64
	api := e.api
	var step *C.char
	var msg [1024]C.char
	set := func(name string, data []int64) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		st := C.npud_emb_set(api, native, cname, (*C.int64_t)(unsafe.Pointer(&data[0])), C.int64_t(rows), C.int64_t(length),
			&step, &msg[0], C.size_t(len(msg)))
		if st != C.OK {
			return tokenizerError(api, C.GoString(step)+"("+name+")", e.dir, st, &msg[0])
		}
		return nil
	}
	if err := set("input_ids", ids); err != nil {
		return nil, dims, err
	}
	if err := set("attention_mask", mask); err != nil {
		return nil, dims, err
	}
	if types != nil {
		if err := set("token_type_ids", types); err != nil {
			return nil, dims, err
		}
	}
	if st := C.npud_emb_start(api, native, &msg[0], C.size_t(len(msg))); st != C.OK {
		return nil, dims, tokenizerError(api, "ov_infer_request_start_async", e.dir, st, &msg[0])
	}
	for {
		st := C.npud_emb_wait_for(api, native, C.int64_t(tokenizerSlice.Milliseconds()), &msg[0], C.size_t(len(msg)))
		if st == C.OK {
			break
		}
		if st != C.RESULT_NOT_READY {
			return nil, dims, tokenizerError(api, "ov_infer_request_wait_for", e.dir, st, &msg[0])
		}
		if ctx.Err() != nil {
			C.npud_emb_cancel(api, native)
			return nil, dims, fmt.Errorf("embedding: %w", context.Cause(ctx))
		}
	}
	cname := C.CString(output)
	defer C.free(unsafe.Pointer(cname))
	var hidden []float32
	for {
		var p *C.float
		if len(hidden) > 0 {
			p = (*C.float)(unsafe.Pointer(&hidden[0]))
		}
		cdims := (*C.int64_t)(unsafe.Pointer(&dims[0]))
		if st := C.npud_emb_output(api, native, cname, C.int(rank), p, C.size_t(len(hidden)), cdims, &step, &msg[0], C.size_t(len(msg))); st != C.OK {
			return nil, dims, tokenizerError(api, C.GoString(step), e.dir, st, &msg[0])
		}
		n := int64(1)
		for _, d := range dims[:rank] {
			n *= d
		}
		if int64(len(hidden)) >= n {
			return hidden[:n], dims, nil
		}
		if n > int64(rows*length)*(1<<16) {
			return nil, dims, fmt.Errorf("%s: %s has shape %v, too large for a batch of %d × %d", e.dir, output, dims[:rank], rows, length)
		}
		hidden = make([]float32, n)
	}
}
