package serve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/npud/npud/npu"
)

// Embed embeds req's inputs with its model, admitted against its tenant's
// stream cap, while holding the engine's slot, so it never overlaps a
// generation. Engines that cannot embed give an error wrapping
// ErrNotSupported.
func (r *Router) Embed(ctx context.Context, req npu.EmbedRequest) (npu.Embedded, error) {
	if r.closing.Load() {
		return npu.Embedded{}, npu.ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	if err != nil {
		return npu.Embedded{}, err
	}
	if !res.pool.engine.Describe().Embeds {
		return npu.Embedded{}, fmt.Errorf("model %q does not support embeddings: %w", req.Model, npu.ErrNotSupported)
	}
	if req.Inputs, err = promptedInputs(res.model, req); err != nil {
		return npu.Embedded{}, err
	}
	release, err := r.admit(req.Tenant)
	if err != nil {
		return npu.Embedded{}, err
	}
	defer release()
	return res.pool.embed(ctx, res.model, req)
}

// embed runs an embedding on m. The model is loaded through the
// lifecycle, as for a generation: outside the slot, kept until the
// embedding ends, then the request's keep-alive starts (and /api/ps shows
// it; 0 unloads it).
func (p *Pool) embed(ctx context.Context, m npu.ModelInfo, req npu.EmbedRequest) (out npu.Embedded, err error) {
	release, err := p.holdFor(ctx, m, req.KeepAlive, req.MayUnpin)
	if err != nil {
		return npu.Embedded{}, err
	}
	defer release()
	err = p.withSlot(ctx, func() error {
		out, err = p.embedResident(ctx, m, req.Inputs, req.Truncate)
		return err
	})
	return out, err
}

// promptedInputs are req's inputs with the model's prompt for
// req.InputType before each, as GenAI's TextEmbeddingPipeline puts its
// query_instruction before a query (openvino.genai
// src/cpp/src/rag/text_embedding_pipeline.cpp, format_query: the
// instruction, then the text). A kind the model has no prompt for is the
// client's error: it asked for an instruction the model would not get.
func promptedInputs(m npu.ModelInfo, req npu.EmbedRequest) ([]string, error) {
	if req.InputType == "" {
		return req.Inputs, nil
	}
	prompt, ok := m.Details.EmbeddingPrompts[req.InputType]
	if !ok {
		msg := fmt.Sprintf("model %q has no prompt for input_type %q", req.Model, req.InputType)
		switch {
		case m.Details.EmbeddingPromptsRefused != "":
			msg += ": its folder's prompts are unreadable (" + m.Details.EmbeddingPromptsRefused + ")"
		case len(m.Details.EmbeddingPrompts) == 0:
			msg += ": its folder defines none; leave input_type out"
		default:
			msg += "; it has " + strings.Join(slices.Sorted(maps.Keys(m.Details.EmbeddingPrompts)), ", ")
		}
		return nil, &npu.InvalidRequestError{Param: "input_type", Message: msg}
	}
	out := make([]string, len(req.Inputs))
	for i, in := range req.Inputs {
		out[i] = prompt + in
	}
	return out, nil
}

// Unserved lists the models folder's models that no engine serves, and
// why.
func (r *Router) Unserved() []npu.UnservedModel {
	var out []npu.UnservedModel
	for _, reg := range []npu.Registry{r.local.cfg.Models, r.local.cfg.Store} {
		l, ok := reg.(npu.UnservedLister)
		if !ok {
			continue
		}
		for _, u := range l.Unserved() {
			if _, served := r.findLocal(u.Model.ID); !served {
				out = append(out, u)
			}
		}
	}
	return out
}

// unservedRegistry is the registry holding name, a model no engine
// serves, with why; nil when none does.
func (r *Router) unservedRegistry(name string) (npu.Registry, string) {
	for _, reg := range []npu.Registry{r.local.cfg.Models, r.local.cfg.Store} {
		l, ok := reg.(npu.UnservedLister)
		if !ok {
			continue
		}
		for _, u := range l.Unserved() {
			if u.Model.ID == name {
				return reg, u.Why
			}
		}
	}
	return nil, ""
}

// Pull fetches a model into the local engine's models folder, else the
// daemon's store. A model npud already serves needs nothing, whatever
// serves it: it is asked first, since a served name ("sim") need not be a
// repository a models folder could fetch. Others need a folder or a store.
func (r *Router) Pull(ctx context.Context, name string, progress func(npu.PullProgress)) error {
	p := r.local
	if _, err := r.Model(name); err == nil {
		return nil
	}
	if reg := p.cfg.Models; reg != nil {
		return reg.Pull(ctx, name, progress)
	}
	if p.cfg.Store != nil {
		return p.cfg.Store.Pull(ctx, name, progress)
	}
	return fmt.Errorf("cannot pull %q: engine %s serves a fixed set of models (%s): %w", name, p.engine.Name(), p.modelNames(), npu.ErrNotSupported)
}

// Delete removes a model from the local engine's models folder.
//
// The lifecycle owns residency: the model is unloaded through it while the
// engine slot is held, so no generation is using the pipeline that goes,
// and only then are its files removed. A request that loaded the model and
// still waits for the slot then finds it gone (model not found).
func (r *Router) Delete(ctx context.Context, name string) error {
	res, err := r.resolve(name)
	if err != nil {
		if reg, _ := r.unservedRegistry(name); reg != nil {
			return reg.Delete(ctx, name) // nothing serves it, so nothing to unload
		}
		return err
	}
	p := res.pool
	if reg := p.cfg.Models; reg != nil && res.upstream == nil {
		return p.withSlot(ctx, func() error {
			if err := p.life.evict(ctx, res.model.ID, "deleted"); err != nil {
				return err
			}
			return reg.Delete(ctx, res.model.ID)
		})
	}
	return fmt.Errorf("cannot delete %q: engine %s serves a fixed set of models: %w", name, p.engine.Name(), npu.ErrNotSupported)
}

// Copy copies a model in the local engine's models folder.
func (r *Router) Copy(ctx context.Context, source, destination string) error {
	if reg := r.local.cfg.Models; reg != nil {
		return reg.Copy(ctx, source, destination)
	}
	res, err := r.resolve(source)
	if err != nil {
		return err
	}
	return fmt.Errorf("cannot copy %q to %q: engine %s serves a fixed set of models: %w", source, destination, res.pool.engine.Name(), npu.ErrNotSupported)
}
