//go:build cgo

package openvino

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/modelstore"
)

// Issue 40 item 2: the NPU's path, forced on the real runtime's CPU plugin
// (no NPU here): the tiny embedding model's inputs reshaped through the
// real ov_model_reshape to the static [4, 64], six texts of different
// lengths in two padded inferences, give the vectors of its dynamic
// compile within 1e-5, for every pooling (the positions kept matter to
// the last token's); the tiny cross-encoder the same scores; and the
// compile writes its blob into CACHE_DIR. Both compile in f32: by default
// the CPU plugin computes in bf16 where the CPU has it (AMX), and its
// kernels for static and dynamic shapes round differently (embedOptions).
func TestOfficialStaticShapesGiveWhatDynamicOnesGive(t *testing.T) {
	_, core := realTokenizerCore(t)
	ctx := context.Background()
	lib := core.compilingEmbeddings(embedOptions{precision: "f32"})
	for _, tc := range []struct {
		mode    string
		pooling modelstore.Pooling
	}{
		{"cls_token", modelstore.PoolCLS},
		{"mean_tokens", modelstore.PoolMean},
		{"lasttoken", modelstore.PoolLastToken},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := tinyEmbedVariant(t, tc.mode, false)
			ir, err := modelstore.ReadEmbeddingIR(dir)
			require.NoError(t, err)
			dynamic, err := lib.openEmbedder(ctx, dir, "CPU", ir)
			require.NoError(t, err)
			defer func() { require.NoError(t, dynamic.close()) }()
			cache := t.TempDir()
			static, err := core.compilingEmbeddings(embedOptions{cacheDir: cache, forceStatic: true, precision: "f32"}).openEmbedder(ctx, dir, "CPU", ir)
			require.NoError(t, err)
			defer func() { require.NoError(t, static.close()) }()
			require.Equal(t, embedShape{rows: npuEmbedBatch, length: 64}, static.static)
			require.Zero(t, dynamic.static)
			blobs, err := filepath.Glob(filepath.Join(cache, "*.blob"))
			require.NoError(t, err)
			assert.NotEmpty(t, blobs, "the CPU plugin cached the compiled model in CACHE_DIR")

			// Static indeed: the compiled model takes its shape only.
			native := <-static.slot
			_, _, err = static.inferOnce(ctx, native, []int64{5, 6, 7, 8, 9, 10}, []int64{1, 1, 1, 1, 1, 1}, make([]int64, 6), 2, 3, modelstore.EmbeddingOutput, 3)
			static.slot <- native
			require.ErrorContains(t, err, "Can't set the input tensor with index: 0, because the model input (shape=[4,64]) and the tensor (shape=(2.3)) are incompatible")

			dynamicOut, err := dynamic.embed(ctx, embedTexts, true)
			require.NoError(t, err)
			staticOut, err := static.embed(ctx, embedTexts, true)
			require.NoError(t, err)
			require.Equal(t, dynamicOut.PromptTokens, staticOut.PromptTokens)
			want, got := dynamicOut.Vectors, staticOut.Vectors
			for i := range embedTexts {
				w := make([]float64, len(want[i]))
				for j, v := range want[i] {
					w[j] = float64(v)
				}
				requireSameVector(t, w, got[i], "input %d", i)
			}
		})
	}

	t.Run("rerank", func(t *testing.T) {
		ir, err := modelstore.ReadRerankIR(tinyRerankFolder)
		require.NoError(t, err)
		dynamic, err := lib.openReranker(ctx, tinyRerankFolder, "CPU", ir)
		require.NoError(t, err)
		defer func() { require.NoError(t, dynamic.close()) }()
		static, err := core.compilingEmbeddings(embedOptions{forceStatic: true, precision: "f32"}).openReranker(ctx, tinyRerankFolder, "CPU", ir)
		require.NoError(t, err)
		defer func() { require.NoError(t, static.close()) }()
		require.Equal(t, npuEmbedBatch, static.static.rows)
		docs := []string{"OpenVINO runs the model on the NPU.", "a", "hello world", "Tools are functions a model may call.", "the NPU", "b c"}
		dynamicRanked, err := dynamic.rerank(ctx, "which device runs the model?", docs, false)
		require.NoError(t, err)
		staticRanked, err := static.rerank(ctx, "which device runs the model?", docs, false)
		require.NoError(t, err)
		want, got := dynamicRanked.Results, staticRanked.Results
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Index, got[i].Index, fmt.Sprintf("rank %d", i))
			require.InDelta(t, want[i].Score, got[i].Score, 1e-5, "rank %d", i)
		}
	})
}
