package sim

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/npud/npud/npu"
)

// EmbeddingDims is the length of the simulated embedding vectors.
const EmbeddingDims = 256

// Embed implements npu.Engine with made-up vectors: deterministic for a
// text, L2-normalized, and meaningless. They let clients and tests exercise
// the embedding endpoints; they carry no semantics.
// The simulated models take any length: nothing is ever cut.
func (e *Engine) Embed(ctx context.Context, model string, inputs []string, truncate bool) (npu.Embedded, error) {
	out := make([][]float32, len(inputs))
	tokens := 0
	for i, text := range inputs {
		out[i] = Embedding(text)
		tokens += CountTokens(text)
	}
	return npu.Embedded{Vectors: out, PromptTokens: tokens}, nil
}

// Embedding is the simulated embedding of text.
func Embedding(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float32, EmbeddingDims)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}
