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

// Embed embeds inputs with model while holding the engine's slot, so it
// never overlaps a generation. Engines that cannot embed give an error
// wrapping ErrNotSupported.
func (r *Runner) Embed(ctx context.Context, model string, inputs []string) (vectors [][]float32, promptTokens int, err error) {
	if !r.engine.Describe().Embeds {
		if _, err := r.Model(model); err != nil {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("model %q does not support embeddings: %w", model, ErrNotSupported)
	}
	// Loaded through the lifecycle, as for a generation: outside the slot,
	// kept until the embedding ends, then its keep-alive starts (and
	// /api/ps shows it).
	if r.owner(model) == r && r.engine.Describe().LoadsModels {
		m, err := r.Model(model)
		if err != nil {
			return nil, 0, err
		}
		if _, err := r.life.acquire(ctx, m); err != nil {
			return nil, 0, err
		}
		defer r.life.release(m.ID, nil, false)
	}
	err = r.withSlot(ctx, model, func(m ModelInfo) error {
		vectors, promptTokens, err = r.embedResident(ctx, m, inputs)
		return err
	})
	return vectors, promptTokens, err
}

// Pull fetches a model into the engine's models folder, else the runner's
// store. A model the engine already serves needs nothing; others need a
// models folder or a store.
func (r *Runner) Pull(ctx context.Context, name string, progress func(PullProgress)) error {
	if reg := r.cfg.Models; reg != nil {
		return reg.Pull(ctx, name, progress)
	}
	if _, err := r.Model(name); err == nil {
		return nil
	}
	if r.cfg.Store != nil {
		return r.cfg.Store.Pull(ctx, name, progress)
	}
	return fmt.Errorf("cannot pull %q: engine %s serves a fixed set of models (%s): %w", name, r.engine.Name(), r.modelNames(), ErrNotSupported)
}

// Delete removes a model from the engine's models folder.
//
// The lifecycle owns residency: the model is unloaded through it while the
// engine slot is held, so no generation is using the pipeline that goes,
// and only then are its files removed. A request that loaded the model and
// still waits for the slot then finds it gone (model not found).
func (r *Runner) Delete(ctx context.Context, name string) error {
	if reg := r.cfg.Models; reg != nil {
		return r.withSlot(ctx, name, func(m ModelInfo) error {
			if err := r.life.evict(ctx, m.ID, "deleted"); err != nil {
				return err
			}
			return reg.Delete(ctx, m.ID)
		})
	}
	if _, err := r.Model(name); err != nil {
		return err
	}
	return fmt.Errorf("cannot delete %q: engine %s serves a fixed set of models: %w", name, r.engine.Name(), ErrNotSupported)
}

// Copy copies a model in the engine's models folder.
func (r *Runner) Copy(ctx context.Context, source, destination string) error {
	if reg := r.cfg.Models; reg != nil {
		return reg.Copy(ctx, source, destination)
	}
	if _, err := r.Model(source); err != nil {
		return err
	}
	return fmt.Errorf("cannot copy %q to %q: engine %s serves a fixed set of models: %w", source, destination, r.engine.Name(), ErrNotSupported)
}

func (r *Runner) modelNames() string {
	var names string
	for i, m := range r.engine.Models() {
		if i > 0 {
			names += ", "
		}
		names += m.ID
	}
	return names
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
