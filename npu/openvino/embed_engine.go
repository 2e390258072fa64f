//go:build cgo

package openvino

import (
	"context"
	"errors"
	"fmt"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// compileEmbedder loads the embedding model in dir on device: with its
// dynamic shapes on CPU and GPU, reshaped to a static batch and length on
// the NPU (openEmbedder), with the engine's CACHE_DIR, so that under AUTO
// it goes to the NPU first like any model.
func (e *Engine) compileEmbedder(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*pipeline, error) {
	emb, err := e.embeddingLibrary().openEmbedder(ctx, dir, device, ir)
	if err != nil {
		return nil, err
	}
	return &pipeline{api: e.cfg.Library.api, embed: emb, model: dir, device: device}, nil
}

// embeddingLibrary is the library compiling embedding and rerank models
// with the engine's CACHE_DIR, as properties gives it to the LLMs.
func (e *Engine) embeddingLibrary() *Library {
	return e.cfg.Library.compilingEmbeddings(embedOptions{cacheDir: e.cfg.CacheDir})
}

// Embed implements npu.Engine for embedding models (the router has loaded
// the model): one vector per input, in order, and the tokens the model
// was given.
func (e *Engine) Embed(ctx context.Context, model string, inputs []string, truncate bool) (npu.Embedded, error) {
	if err := e.cfg.Library.embeddingSupport(); err != nil {
		return npu.Embedded{}, fmt.Errorf("model %q does not support embeddings (%w): %w", model, err, npu.ErrNotSupported)
	}
	e.mu.Lock()
	p, ok := e.pipelines[model]
	e.mu.Unlock()
	if !ok {
		return npu.Embedded{}, fmt.Errorf("model %q is not loaded: %w", model, npu.ErrModelNotFound)
	}
	if p.rerank != nil {
		return npu.Embedded{}, &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is a rerank model (its openvino_model.xml gives %s): it reranks documents at /v1/rerank", model, modelstore.RerankOutput)}
	}
	if p.embed == nil {
		return npu.Embedded{}, &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is not an embedding model: its folder's openvino_model.xml does not take input_ids and attention_mask and give %s", model, modelstore.EmbeddingOutput)}
	}
	if !p.busy.CompareAndSwap(false, true) {
		return npu.Embedded{}, fmt.Errorf("openvino: the model %q is being freed or is embedding already", model)
	}
	defer p.busy.Store(false)
	out, err := p.embed.embed(ctx, inputs, truncate)
	var empty *emptyInputError
	var long *TooLongInputError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &empty), errors.As(err, &long), errors.Is(err, ErrTextTooLong):
		return npu.Embedded{}, &npu.InvalidRequestError{Param: "input", Message: err.Error()}
	case ctx.Err() != nil:
		return npu.Embedded{}, err
	}
	return npu.Embedded{}, &npu.EngineError{Engine: "openvino", Cause: err}
}
