package npu

import (
	"context"
	"fmt"
	"math"
)

// ShortenEmbeddings keeps the first dimensions of each vector, scaled back
// to unit length (as Matryoshka-trained models are read, and as Ollama and
// OpenAI answer "dimensions"); 0 keeps them whole. The caller checked
// dimensions against the vectors' length.
func ShortenEmbeddings(vectors [][]float32, dimensions int) {
	if dimensions <= 0 {
		return
	}
	for i, v := range vectors {
		v = v[:dimensions]
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if n := math.Sqrt(sum); n != 0 {
			for j := range v {
				v[j] = float32(float64(v[j]) / n)
			}
		}
		vectors[i] = v
	}
}

// PullProgress is one step of a pull, in the shape Ollama clients show.
type PullProgress struct {
	Status    string
	Digest    string // the file being fetched
	Total     int64
	Completed int64
}

// Registry is a models folder: models are fetched into it, removed and
// copied (OpenVINO's models folder, which the daemon owns).
type Registry interface {
	Pull(ctx context.Context, name string, progress func(PullProgress)) error
	Delete(ctx context.Context, name string) error
	Copy(ctx context.Context, source, destination string) error
}

// UnservedModel is a model in a models folder that no engine serves (one
// pulled while the simulated engine serves), and why.
type UnservedModel struct {
	Model ModelInfo
	Why   string
}

// UnservedLister is a Registry that can hold models no engine serves:
// they are listed as such, and removed, but not run.
type UnservedLister interface {
	Unserved() []UnservedModel
}

// Unserved lists the models folder's models that no engine serves, and
// why.
func (r *Router) Unserved() []UnservedModel {
	var out []UnservedModel
	for _, reg := range []Registry{r.local.cfg.Models, r.local.cfg.Store} {
		l, ok := reg.(UnservedLister)
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
func (r *Router) unservedRegistry(name string) (Registry, string) {
	for _, reg := range []Registry{r.local.cfg.Models, r.local.cfg.Store} {
		l, ok := reg.(UnservedLister)
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

// EmbedRequest is one embedding job.
type EmbedRequest struct {
	Model  string
	Inputs []string
	// Tenant is who the work counts against, with its generations and
	// transcriptions ("" counts against nobody).
	Tenant string
}

// Embed embeds req's inputs with its model, admitted against its tenant's
// stream cap, while holding the engine's slot, so it never overlaps a
// generation. Engines that cannot embed give an error wrapping
// ErrNotSupported.
func (r *Router) Embed(ctx context.Context, req EmbedRequest) (vectors [][]float32, promptTokens int, err error) {
	if r.closing.Load() {
		return nil, 0, ErrShuttingDown
	}
	res, err := r.resolve(req.Model)
	if err != nil {
		return nil, 0, err
	}
	if !res.pool.engine.Describe().Embeds {
		return nil, 0, fmt.Errorf("model %q does not support embeddings: %w", req.Model, ErrNotSupported)
	}
	release, err := r.admit(req.Tenant)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	return res.pool.embed(ctx, res.model, req.Inputs)
}

// embed runs an embedding on m. The model is loaded through the
// lifecycle, as for a generation: outside the slot, kept until the
// embedding ends, then its keep-alive starts (and /api/ps shows it).
func (p *Pool) embed(ctx context.Context, m ModelInfo, inputs []string) (vectors [][]float32, promptTokens int, err error) {
	release, err := p.hold(ctx, m)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	err = p.withSlot(ctx, func() error {
		vectors, promptTokens, err = p.embedResident(ctx, m, inputs)
		return err
	})
	return vectors, promptTokens, err
}

// Pull fetches a model into the local engine's models folder, else the
// daemon's store. A model the engine already serves needs nothing; others
// need a models folder or a store.
func (r *Router) Pull(ctx context.Context, name string, progress func(PullProgress)) error {
	p := r.local
	if reg := p.cfg.Models; reg != nil {
		return reg.Pull(ctx, name, progress)
	}
	if _, err := r.Model(name); err == nil {
		return nil
	}
	if p.cfg.Store != nil {
		return p.cfg.Store.Pull(ctx, name, progress)
	}
	return fmt.Errorf("cannot pull %q: engine %s serves a fixed set of models (%s): %w", name, p.engine.Name(), p.modelNames(), ErrNotSupported)
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
	return fmt.Errorf("cannot delete %q: engine %s serves a fixed set of models: %w", name, p.engine.Name(), ErrNotSupported)
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
	return fmt.Errorf("cannot copy %q to %q: engine %s serves a fixed set of models: %w", source, destination, res.pool.engine.Name(), ErrNotSupported)
}

// Capabilities lists what a model can do, in Ollama's words: completion
// (except for a speech-only model); tools, thinking, vision and audio when
// its folder says so. Never
// "embedding" for a chat model: the Ollama CLI would print vectors for
// `ollama run` (/api/embed works without it).
func Capabilities(m ModelInfo) []string {
	if m.Details.SpeechOnly {
		return []string{"audio"} // it transcribes; it completes nothing
	}
	caps := []string{"completion"}
	if m.Details.ToolFormat != "" {
		caps = append(caps, "tools")
	}
	if m.Details.Thinking {
		caps = append(caps, "thinking")
	}
	if m.Details.Vision {
		caps = append(caps, "vision")
	}
	if m.Details.Speech {
		caps = append(caps, "audio")
	}
	return caps
}
