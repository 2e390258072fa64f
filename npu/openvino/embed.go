//go:build cgo

package openvino

/*
#include <stdlib.h>
#include <string.h>
#include "ovapi.h"

// An embedding or rerank model on OpenVINO's core (npud_core_model,
// ovapi.h). It is compiled with its shapes as exported (dynamic), as
// GenAI's TextEmbeddingPipeline does on CPU and GPU when no batch size or
// length is configured: npud_core_model_open without an extension.
typedef npud_core_model npud_emb;

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
	"unsafe"

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
	// slot holds the native model while no inference runs: taking it is
	// the lock; nil once closed.
	slot chan *C.npud_emb
}

// openEmbedder compiles the embedding model in dir for device, and its
// tokenizer on the CPU.
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
	tok, err := l.OpenTokenizer(ctx, dir, TokenizerOptions{})
	if err != nil {
		return nil, err
	}
	xml := filepath.Join(dir, "openvino_model.xml")
	cxml, cdev := C.CString(xml), C.CString(device)
	defer C.free(unsafe.Pointer(cxml))
	defer C.free(unsafe.Pointer(cdev))
	native := (*C.npud_emb)(C.calloc(1, C.sizeof_npud_emb))
	if native == nil {
		_ = tok.Close()
		return nil, errors.New("opening the embedding model: out of memory")
	}
	var step *C.char
	var msg [1024]C.char
	if st := C.npud_core_model_open(l.api, nil, cxml, cdev, native, &step, &msg[0], C.size_t(len(msg))); st != C.OK {
		C.free(unsafe.Pointer(native))
		_ = tok.Close()
		return nil, tokenizerError(l.api, C.GoString(step), xml, st, &msg[0])
	}
	e := &embedder{api: l.api, dir: dir, ir: ir, cfg: cfg, tok: tok, slot: make(chan *C.npud_emb, 1)}
	e.slot <- native
	return e, nil
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
// default, true), the text's own cut so that all fit maxLength, as a
// tokenizer truncating on the right does (GenAI passes truncation=true).
func (e *embedder) tokens(ctx context.Context, text string) ([]int64, error) {
	content, err := e.tok.Encode(ctx, text)
	if err != nil {
		return nil, err
	}
	room := e.cfg.MaxLength - len(e.tok.prefix) - len(e.tok.suffix)
	if room < 0 {
		return nil, fmt.Errorf("%s: the model takes %d tokens, fewer than the %d special tokens its tokenizer adds", e.dir, e.cfg.MaxLength, len(e.tok.prefix)+len(e.tok.suffix))
	}
	content = content[:min(len(content), room)]
	ids := make([]int64, 0, len(e.tok.prefix)+len(content)+len(e.tok.suffix))
	ids = append(append(append(ids, e.tok.prefix...), content...), e.tok.suffix...)
	return ids, nil
}

// embed returns one vector per input, in order, and the tokens the model
// was given (after truncation, special tokens included).
func (e *embedder) embed(ctx context.Context, inputs []string) ([][]float32, int, error) {
	seqs := make([][]int64, len(inputs))
	total := 0
	for i, text := range inputs {
		ids, err := e.tokens(ctx, text)
		if err != nil {
			return nil, 0, fmt.Errorf("input %d: %w", i, err)
		}
		if len(ids) == 0 {
			return nil, 0, &emptyInputError{index: i}
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
			return nil, 0, err
		}
		out = append(out, vecs...)
		start = end
	}
	return out, total, nil
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
// the inputs (token_type_ids when types is not nil), runs the model
// (waiting in slices, cancelled when ctx ends) and reads its output of
// rank rank: the values and the dims.
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
