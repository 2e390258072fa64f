package openvino

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/npud/npud/npu/modelstore"
)

// Issue 40: pooling as GenAI's TextEmbeddingPipeline post-processes
// (text_embedding_utils.cpp), on two rows of a right-padded batch whose
// values are small enough to check by hand.
func TestPool(t *testing.T) {
	// rows 2, length 3, width 2; row 0 has 3 tokens, row 1 has 2 (then a pad).
	hidden := []float32{
		1, 0, 3, 4, 5, 6,
		0, 2, 6, 8, 100, 100,
	}
	mask := []int64{1, 1, 1, 1, 1, 0}
	for _, tc := range []struct {
		name string
		cfg  modelstore.EmbeddingConfig
		want [][]float32
	}{
		{"cls", modelstore.EmbeddingConfig{Pooling: modelstore.PoolCLS}, [][]float32{{1, 0}, {0, 2}}},
		{"cls normalised", modelstore.EmbeddingConfig{Pooling: modelstore.PoolCLS, Normalize: true}, [][]float32{{1, 0}, {0, 1}}},
		{"mean over the mask", modelstore.EmbeddingConfig{Pooling: modelstore.PoolMean}, [][]float32{{3, 10.0 / 3}, {3, 5}}},
		{"last token before the padding", modelstore.EmbeddingConfig{Pooling: modelstore.PoolLastToken}, [][]float32{{5, 6}, {6, 8}}},
		{"last token normalised", modelstore.EmbeddingConfig{Pooling: modelstore.PoolLastToken, Normalize: true},
			[][]float32{{5 / 7.8102497, 6 / 7.8102497}, {0.6, 0.8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pool(hidden, mask, 2, 3, 2, tc.cfg)
			for i := range tc.want {
				assert.InDeltaSlice(t, tc.want[i], got[i], 1e-6, "row %d", i)
			}
		})
	}
	// A zero vector stays zero when normalised (the epsilon), as
	// NormalizeL2 with EpsMode MAX leaves it.
	zero := pool([]float32{0, 0}, []int64{1}, 1, 1, 2, modelstore.EmbeddingConfig{Pooling: modelstore.PoolCLS, Normalize: true})
	assert.Equal(t, []float32{0, 0}, zero[0])
}
