package npu

import (
	"context"
	"math"
	"time"
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

// Embedded is an embedding's outcome.
type Embedded struct {
	Vectors      [][]float32 // one per input, in order
	PromptTokens int         // the tokens the model was given (after truncation)
	Truncated    int         // the inputs cut to fit the model
}

// EmbedRequest is one embedding job.
type EmbedRequest struct {
	Model  string
	Inputs []string
	// InputType names the kind of the inputs ("query", "document"): the
	// model's prompt for that kind goes before each (ModelDetails.
	// EmbeddingPrompts); "" puts none.
	InputType string
	// Truncate cuts an input longer than the model takes to fit (Ollama's
	// default); without it such an input is refused (OpenAI's behaviour).
	Truncate bool
	// Tenant is who the work counts against, with its generations and
	// transcriptions ("" counts against nobody).
	Tenant string
	// KeepAlive is how long the model stays loaded after this request, as
	// npu.Request's (nil: the default; 0: unload it now); MayUnpin as
	// npu.Request's.
	KeepAlive *time.Duration
	MayUnpin  bool
}

// Capabilities lists what a model can do, in Ollama's words: completion
// (except for a speech-only model), or embedding alone for an embedding
// model, rerank alone for a cross-encoder; tools, thinking, vision and audio when
// its folder says so. Never
// "embedding" for a chat model: the Ollama CLI would print vectors for
// `ollama run` (/api/embed works without it).
func Capabilities(m ModelInfo) []string {
	if m.Details.SpeechOnly {
		return []string{"audio"} // it transcribes; it completes nothing
	}
	if m.Details.EmbeddingOnly {
		return []string{"embedding"} // it embeds; it completes nothing
	}
	if m.Details.RerankOnly {
		return []string{"rerank"} // it scores pairs; it completes nothing
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
