//go:build cgo

package openvino

/*
#include <stdlib.h>
#include <string.h>
#include "ovapi.h"

// A model's tokenizer on OpenVINO's core (npud_core_model, ovapi.h): the
// core that loaded openvino-tokenizers, the compiled IR and its one infer
// request.
typedef npud_core_model npud_tok;

// npud_tok_open opens a tokenizer: GenAI compiles its tokenizer on the CPU
// only (tokenizer_impl.cpp).
static ov_status_e npud_tok_open(const npud_ov_api* api, const char* extension, const char* xml, npud_tok* t,
                                 const char** step, char* msg, size_t len) {
    return npud_core_model_open(api, extension, xml, "CPU", t, step, msg, len);
}

// npud_tok_start sets one string as input 0 (the tensor holds a copy, and
// the request a reference to the tensor) and starts the inference.
static ov_status_e npud_tok_start(const npud_ov_api* api, npud_tok* t, const char* text, const char** step, char* msg,
                                  size_t len) {
    ov_status_e st;
    int64_t dims[1] = {1};
    ov_shape_t shape = {0};
    ov_tensor_t* tensor = NULL;
    *step = "ov_shape_create";
    if ((st = api->tok.ov_shape_create(1, dims, &shape)) != OK) goto fail;
    *step = "ov_tensor_create_from_string_array";
    st = api->tok.ov_tensor_create_from_string_array(&text, 1, shape, &tensor);
    api->tok.ov_shape_free(&shape);
    if (st != OK) goto fail;
    *step = "ov_infer_request_set_input_tensor_by_index";
    st = api->tok.ov_infer_request_set_input_tensor_by_index(t->request, 0, tensor);
    api->tok.ov_tensor_free(tensor);
    if (st != OK) goto fail;
    *step = "ov_infer_request_start_async";
    if ((st = api->tok.ov_infer_request_start_async(t->request)) != OK) goto fail;
    return OK;
fail:
    npud_core_last_err(api, msg, len);
    return st;
}

static ov_status_e npud_tok_wait_for(const npud_ov_api* api, npud_tok* t, int64_t ms, char* msg, size_t len) {
    ov_status_e st = api->tok.ov_infer_request_wait_for(t->request, ms);
    if (st != OK && st != RESULT_NOT_READY) npud_core_last_err(api, msg, len);
    return st;
}

// npud_tok_cancel stops a running inference and waits for it to end, so
// the request can run again (or be freed).
static void npud_tok_cancel(const npud_ov_api* api, npud_tok* t) {
    api->tok.ov_infer_request_cancel(t->request);
    api->tok.ov_infer_request_wait(t->request);
}

// npud_tok_ids copies input_ids, an [1, n] tensor of I64 or I32, into out
// (cap entries) and sets n; when n > cap it copies nothing, and the caller
// asks again with room for n.
static ov_status_e npud_tok_ids(const npud_ov_api* api, npud_tok* t, int64_t* out, size_t cap, size_t* n,
                                const char** step, char* msg, size_t len) {
    ov_status_e st;
    ov_tensor_t* ids = NULL;
    ov_shape_t shape = {0};
    ov_element_type_e type;
    void* data = NULL;
    *step = "ov_infer_request_get_tensor(input_ids)";
    if ((st = api->tok.ov_infer_request_get_tensor(t->request, "input_ids", &ids)) != OK) goto fail;
    *step = "ov_tensor_get_shape";
    if ((st = api->tok.ov_tensor_get_shape(ids, &shape)) != OK) goto fail;
    *step = "input_ids: a shape of [1, n]";
    if (shape.rank != 2 || shape.dims[0] != 1 || shape.dims[1] < 0) {
        api->tok.ov_shape_free(&shape);
        st = GENERAL_ERROR;
        goto fail;
    }
    *n = (size_t)shape.dims[1];
    api->tok.ov_shape_free(&shape);
    *step = "ov_tensor_get_element_type";
    if ((st = api->tok.ov_tensor_get_element_type(ids, &type)) != OK) goto fail;
    *step = "input_ids: I64 or I32";
    if (type != I64 && type != I32) {
        st = GENERAL_ERROR;
        goto fail;
    }
    if (*n > cap || *n == 0) {
        api->tok.ov_tensor_free(ids);
        return OK;
    }
    *step = "ov_tensor_data";
    if ((st = api->tok.ov_tensor_data(ids, &data)) != OK) goto fail;
    for (size_t i = 0; i < *n; i++) out[i] = type == I64 ? ((const int64_t*)data)[i] : ((const int32_t*)data)[i];
    api->tok.ov_tensor_free(ids);
    return OK;
fail:
    npud_core_last_err(api, msg, len);
    if (ids) api->tok.ov_tensor_free(ids);
    return st;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// DefaultTokenizerMaxBytes is the longest text a ModelTokenizer encodes
// unless told otherwise: 4 MiB. The longest contexts served today are about
// a million tokens, and BPE vocabularies average about four bytes a token
// in prose, so a longer text is past any model's context (the caller
// refuses it as too long either way) and costs more than it is worth to
// count: openvino-tokenizers holds several copies of its input while it
// runs (measured with the tiny model's tokenizer, 8 MiB took 0.6 s and
// some 270 MB at its peak; docs/OPENVINO-INTERNALS.md).
const DefaultTokenizerMaxBytes = 4 << 20

// DefaultTokenizerTimeout bounds one encode when the caller's context has
// no earlier deadline: a tokenizer that has not answered by then is
// cancelled and its caller gets an error, never a hang.
const DefaultTokenizerTimeout = time.Minute

// tokenizerSlice is how long one wait on the native inference lasts before
// the context is looked at again: how late a cancellation takes effect.
const tokenizerSlice = 20 * time.Millisecond

var (
	// ErrTokenizerClosed is returned by a ModelTokenizer used after Close
	// (and by a second Close).
	ErrTokenizerClosed = errors.New("the model's tokenizer is closed")
	// ErrTextTooLong is wrapped when a text is over the tokenizer's size
	// limit: it is refused, never truncated.
	ErrTextTooLong = errors.New("the text is too long to count")
	// ErrNoModelTokenizer is wrapped when the model folder has no
	// openvino_tokenizer.xml (GenAI then starts no pipeline either).
	ErrNoModelTokenizer = errors.New("the model folder has no openvino_tokenizer.xml")
	// ErrTokenizerUnsupported is wrapped when OpenVINO's core C library
	// lacks a function the tokenizer calls.
	ErrTokenizerUnsupported = errors.New("OpenVINO's core C library cannot run a model's tokenizer")
)

// TokenizerOptions tunes a ModelTokenizer; the zero value is the defaults.
type TokenizerOptions struct {
	MaxBytes int           // the longest text encoded (0: DefaultTokenizerMaxBytes)
	Timeout  time.Duration // the longest one encode runs (0: DefaultTokenizerTimeout)
}

// ModelTokenizer is a model's own tokenizer (the folder's
// openvino_tokenizer.xml) compiled on the CPU through OpenVINO's core C
// API with the openvino-tokenizers extension, as GenAI compiles it. It
// counts text as GenAI prefills it: Count is the number of tokens GenAI's
// pipelines feed the model for a templated prompt. It is safe for
// concurrent use; encodes run one at a time on its one infer request.
type ModelTokenizer struct {
	api    *C.npud_ov_api
	folder string
	opts   TokenizerOptions
	// slot holds the native tokenizer while nobody uses it: taking it is
	// the lock (a channel, so a wait for it honours the context); nil
	// once closed.
	slot chan *C.npud_tok
	// prefix and suffix are the ids the IR adds around every text
	// (add_special_tokens as exported), found at open.
	prefix, suffix []int64
}

// OpenTokenizer compiles the tokenizer of the model in folder with the
// openvino-tokenizers library GenAI uses (Library.TokenizersFile, found by
// FindTokenizers).
func (l *Library) OpenTokenizer(ctx context.Context, folder string, opts TokenizerOptions) (*ModelTokenizer, error) {
	if l.api.tokenizer_missing != nil {
		return nil, fmt.Errorf("%w: it lacks %s", ErrTokenizerUnsupported, C.GoString(l.api.tokenizer_missing))
	}
	if l.TokenizersErr != nil {
		return nil, l.TokenizersErr
	}
	if l.TokenizersFile == "" {
		return nil, fmt.Errorf("%w (set %s to it)", ErrTokenizersNotFound, EnvTokenizersPath)
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultTokenizerMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTokenizerTimeout
	}
	xml := filepath.Join(folder, "openvino_tokenizer.xml")
	cext, cxml := C.CString(l.TokenizersFile), C.CString(xml)
	defer C.free(unsafe.Pointer(cext))
	defer C.free(unsafe.Pointer(cxml))
	tok := (*C.npud_tok)(C.calloc(1, C.sizeof_npud_tok))
	if tok == nil {
		return nil, errors.New("opening the model's tokenizer: out of memory")
	}
	var step *C.char
	var msg [1024]C.char
	if st := C.npud_tok_open(l.api, cext, cxml, tok, &step, &msg[0], C.size_t(len(msg))); st != C.OK {
		C.free(unsafe.Pointer(tok))
		err := tokenizerError(l.api, C.GoString(step), xml, st, &msg[0])
		if _, statErr := os.Stat(xml); errors.Is(statErr, os.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrNoModelTokenizer, err)
		}
		return nil, err
	}
	t := &ModelTokenizer{api: l.api, folder: folder, opts: opts, slot: make(chan *C.npud_tok, 1)}
	t.slot <- tok
	if err := t.findSpecialTokens(ctx); err != nil {
		_ = t.Close()
		return nil, err
	}
	return t, nil
}

// tokenizerError is a failed native step, with the core's message (its
// last line: the lines above it name OpenVINO's source files).
func tokenizerError(api *C.npud_ov_api, step, input string, st C.ov_status_e, msg *C.char) error {
	err := check(api, step, input, st)
	if text := strings.TrimSpace(C.GoString(msg)); text != "" {
		lines := strings.Split(text, "\n")
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(lines[len(lines)-1]))
	}
	return err
}

// findSpecialTokens learns what the IR adds to every text. openvino-
// tokenizers exports add_special_tokens as a constant (true); GenAI turns
// it into a state (its MakeAddSpecialTokensSatateful pass, tokenizer_impl.cpp)
// and sets it false for templated prompts, which zeroes the lengths of the
// special-token segments around the text (make_tokenizer_stateful.cpp). The
// core C API cannot run that pass, so npud strips the same segments: the
// empty text encodes to exactly them, and a one-letter text shows which
// of them come before the text and which after.
func (t *ModelTokenizer) findSpecialTokens(ctx context.Context) error {
	empty, err := t.encodeRaw(ctx, "")
	if err != nil {
		return err
	}
	one, err := t.encodeRaw(ctx, "a")
	if err != nil {
		return err
	}
	if len(one) <= len(empty) {
		return fmt.Errorf("%s: the tokenizer gives %d ids for \"a\" and %d for \"\": cannot tell what it adds", t.folder, len(one), len(empty))
	}
	// The longest prefix of empty that one starts with, such that the
	// rest of empty is how one ends.
	for k := min(len(empty), len(one)); k >= 0; k-- {
		if slices.Equal(one[:k], empty[:k]) && slices.Equal(one[len(one)-(len(empty)-k):], empty[k:]) {
			t.prefix, t.suffix = slices.Clone(empty[:k]), slices.Clone(empty[k:])
			return nil
		}
	}
	return fmt.Errorf("%s: the tokenizer adds %v to an empty text, not around \"a\" (%v): cannot tell what it adds", t.folder, empty, one)
}

// Count is the number of tokens GenAI prefills for text when text is a
// templated prompt: the tokenizer's ids without the special tokens it adds
// (GenAI encodes templated prompts with add_special_tokens(false):
// llm/pipeline_stateful.cpp, llm/pipeline_static.cpp,
// continuous_batching/pipeline_base.cpp).
func (t *ModelTokenizer) Count(ctx context.Context, text string) (int, error) {
	ids, err := t.Encode(ctx, text)
	return len(ids), err
}

// Encode is the ids Count counts.
func (t *ModelTokenizer) Encode(ctx context.Context, text string) ([]int64, error) {
	ids, err := t.encodeRaw(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(ids) < len(t.prefix)+len(t.suffix) || !slices.Equal(ids[:len(t.prefix)], t.prefix) ||
		!slices.Equal(ids[len(ids)-len(t.suffix):], t.suffix) {
		return nil, fmt.Errorf("%s: the tokenizer's ids are not framed by the special tokens it adds (%v, %v)", t.folder, t.prefix, t.suffix)
	}
	return ids[len(t.prefix) : len(ids)-len(t.suffix)], nil
}

// encodeRaw runs the IR on text: every id, the special tokens included.
func (t *ModelTokenizer) encodeRaw(ctx context.Context, text string) ([]int64, error) {
	if len(text) > t.opts.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the tokenizer's limit of %d", ErrTextTooLong, len(text), t.opts.MaxBytes)
	}
	if i := strings.IndexByte(text, 0); i >= 0 {
		// OpenVINO takes C strings: the text would end there.
		return nil, fmt.Errorf("the text holds a NUL byte at %d, which a model's tokenizer cannot take", i)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	var tok *C.npud_tok
	select {
	case tok = <-t.slot:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if tok == nil {
		t.slot <- nil // closed: the next caller learns it too
		return nil, ErrTokenizerClosed
	}
	defer func() { t.slot <- tok }()
	return t.run(ctx, tok, text)
}

// run starts the inference, waits for it in slices, cancelling it when ctx
// ends, and reads its ids.
func (t *ModelTokenizer) run(ctx context.Context, tok *C.npud_tok, text string) ([]int64, error) {
	api := t.api
	ctext := C.CString(text)
	var step *C.char
	var msg [1024]C.char
	st := C.npud_tok_start(api, tok, ctext, &step, &msg[0], C.size_t(len(msg)))
	C.free(unsafe.Pointer(ctext))
	if st != C.OK {
		return nil, tokenizerError(api, C.GoString(step), t.folder, st, &msg[0])
	}
	for {
		st = C.npud_tok_wait_for(api, tok, C.int64_t(tokenizerSlice.Milliseconds()), &msg[0], C.size_t(len(msg)))
		if st != C.RESULT_NOT_READY {
			break
		}
		if ctx.Err() != nil {
			C.npud_tok_cancel(api, tok)
			return nil, fmt.Errorf("counting tokens: %w", context.Cause(ctx))
		}
	}
	if st != C.OK {
		return nil, tokenizerError(api, "ov_infer_request_wait_for", t.folder, st, &msg[0])
	}
	// Room for a short text's ids; a longer one's are asked for again
	// with room for them all.
	ids := make([]int64, min(len(text)+16, 4096))
	var n C.size_t
	for {
		var p *C.int64_t
		if len(ids) > 0 {
			p = (*C.int64_t)(unsafe.Pointer(&ids[0]))
		}
		if st := C.npud_tok_ids(api, tok, p, C.size_t(len(ids)), &n, &step, &msg[0], C.size_t(len(msg))); st != C.OK {
			return nil, tokenizerError(api, C.GoString(step), t.folder, st, &msg[0])
		}
		if int(n) <= len(ids) {
			return ids[:n:n], nil
		}
		ids = make([]int64, n)
	}
}

// Close frees the native tokenizer, after the encode running (if any)
// ends. A second Close, like any use after Close, is ErrTokenizerClosed.
func (t *ModelTokenizer) Close() error {
	tok := <-t.slot
	t.slot <- nil
	if tok == nil {
		return ErrTokenizerClosed
	}
	C.npud_core_model_close(t.api, tok)
	C.free(unsafe.Pointer(tok))
	return nil
}
