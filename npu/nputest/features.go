package nputest

import (
	"context"
	"errors"
	"testing"

	"github.com/npud/npud/npu"
)

// AssertFeatures checks that an engine's Describe and its methods agree:
// each operation it says it performs does not answer ErrNotSupported (it
// may fail otherwise: model is whatever the engine serves), and each it
// does not say it performs does. A Describe that forgot an override, or an
// override that Describe forgot, fails here, not in a client's request.
func AssertFeatures(t testing.TB, engine npu.Engine, model string) {
	t.Helper()
	ctx := context.Background()
	f := engine.Describe()
	check := func(op string, claimed bool, err error) {
		t.Helper()
		if unsupported := errors.Is(err, npu.ErrNotSupported); unsupported == claimed {
			t.Errorf("engine %s: Describe says %s=%v, but it answered %v", engine.Name(), op, claimed, err)
		}
	}
	if f.LoadsModels {
		// Unloading needs a loaded model; loading one proves the claim.
		check("LoadsModels", true, engine.Load(ctx, model))
		check("LoadsModels", true, engine.Unload(model))
	} else {
		check("LoadsModels", false, engine.Load(ctx, model))
		check("LoadsModels", false, engine.Unload(model))
	}
	check("Reloads", f.Reloads, engine.Reload(ctx, model))
	_, err := engine.Embed(ctx, model, []string{"features"}, false)
	check("Embeds", f.Embeds, err)
	if r, ok := engine.(npu.Reranker); ok {
		_, err = r.Rerank(ctx, model, "features", []string{"features"}, false)
		check("Reranks", f.Reranks, err)
	} else if f.Reranks {
		t.Errorf("engine %s: Describe says Reranks=true, but it is no npu.Reranker", engine.Name())
	}
	_, err = engine.Transcribe(ctx, &npu.TranscribeRequest{Model: model, Samples: make([]float32, npu.AudioSampleRate/10), Task: npu.TaskTranscribe})
	check("Transcribes", f.Transcribes, err)
	// An engine that counts may still not count model's prompts (GenAI
	// renders them): it says so with ErrPromptNotCounted.
	_, err = engine.CountPrompt(ctx, &npu.Request{Model: model, Prompt: "count me"})
	if f.ExactCounts && errors.Is(err, npu.ErrPromptNotCounted) {
		err = nil
	}
	check("ExactCounts", f.ExactCounts, err)
	if _, ok := engine.PromptTokens(&npu.Request{Model: model, Prompt: "count me"}); ok != f.CountsPrompts {
		t.Errorf("engine %s: Describe says CountsPrompts=%v, but PromptTokens answered ok=%v", engine.Name(), f.CountsPrompts, ok)
	}
}
