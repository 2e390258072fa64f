//go:build cgo

package openvino

import (
	"context"
	"fmt"

	"github.com/npud/npud/npu"
)

// CountPrompt implements npu.Engine: the request's conversation rendered
// with the model's renderer and counted with its own tokenizer, as
// generateRendered counts it before generating, so the count is the
// prompt_tokens a generation of the same request reports. It renders and
// counts only: the pipeline is not used, so its busy flag is not taken
// and a count runs beside a generation on the same model (the tokenizer
// may be used from several goroutines at once).
//
// A model whose prompts GenAI renders answers ErrPromptNotCounted: GenAI
// counts them only as it generates.
func (e *Engine) CountPrompt(ctx context.Context, req *npu.Request) (int, error) {
	// A reload swaps a fresh pipeline in and frees the old one, closing its
	// tokenizer: a count that met the old one's close counts again on the
	// new one.
	for attempt := 0; ; attempt++ {
		p, pr, err := e.prompterOf(req.Model)
		if err != nil {
			return 0, err
		}
		r, err := pr.render(ctx, req, chatMessages(req))
		if err != nil && attempt == 0 && e.replaced(req.Model, p) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return r.tokens, nil
	}
}

// prompterOf is the loaded model's pipeline and the prompter that renders
// and counts its prompts, read under the engine's lock (free clears the
// pipeline's prompter under it, or after the pipeline left the map).
func (e *Engine) prompterOf(model string) (*pipeline, *prompter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.pipelines[model]
	switch {
	case !ok:
		return nil, nil, fmt.Errorf("model %q is not loaded: %w", model, npu.ErrModelNotFound)
	case p.whisper != nil:
		return nil, nil, npu.CheckGenerates(npu.ModelInfo{ID: model, Details: npu.ModelDetails{SpeechOnly: true}})
	case p.prompt == nil:
		return nil, nil, fmt.Errorf("model %q: GenAI renders its prompts from its chat template: %w", model, npu.ErrPromptNotCounted)
	}
	return p, p.prompt, nil
}

// replaced reports whether model's pipeline is no longer p (a reload
// swapped another in, or it was unloaded).
func (e *Engine) replaced(model string, p *pipeline) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pipelines[model] != p
}
