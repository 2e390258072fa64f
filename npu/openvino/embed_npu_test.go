//go:build cgo

package openvino

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
	"github.com/npud/npud/npu/openvino/ovtestlib"
)

// testCoreCompileCached: the test core's last compile found its blob in
// CACHE_DIR.
func testCoreCompileCached() bool { return testHook("ovtest_core_last_compile_cached") != 0 }

// Issue 40 item 2: an embedding model and a cross-encoder give on the NPU
// (static shapes: every batch padded to [4, L]) what they give on the CPU
// (dynamic shapes): the same vectors and scores, for batches of more texts
// than the NPU's 4 and of more than one inference's 32, a text truncated
// at the model's length, a pair past it refused; under AUTO they go to the
// NPU; and they compile with the engine's CACHE_DIR.
func TestEncoderModelsOnTheNPUGiveWhatTheCPUGives(t *testing.T) {
	texts := make([]string, maxEmbedBatch+7)
	for i := range texts {
		texts[i] = strings.Repeat("word"+strconv.Itoa(i%5)+" ", 1+i%9) + strconv.Itoa(i)
	}
	docs := []string{"the NPU runs it", "a", "OpenVINO compiles the model once", "b c d", "cached blobs load fast", "e f"}
	for _, tc := range []struct {
		name, devices, device, runsOn string
	}{
		{"CPU, dynamic shapes", "CPU", "CPU", "CPU"},
		{"NPU, static shapes", "NPU", "NPU", "NPU"},
		{"AUTO takes the NPU first", "NPU,GPU,CPU", "AUTO", "NPU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := modelsDir(t)
			ovtestlib.WriteEmbeddingModel(t, dir, "embed", 6)
			ovtestlib.WriteRerankModel(t, dir, "rerank", 12)
			e, r := newTestEngine(t, tc.devices, Config{Device: tc.device, ModelsDir: dir, CacheDir: t.TempDir()})

			embedded, err := r.Embed(context.Background(), npu.EmbedRequest{Model: "embed", Inputs: texts, Truncate: true})
			require.NoError(t, err)
			vectors, tokens := embedded.Vectors, embedded.PromptTokens
			require.Len(t, vectors, len(texts))
			want := 0
			for i, text := range texts {
				assert.InDeltaSlice(t, ovtestlib.Embedding(text, 6), vectors[i], 1e-6, "input %d", i)
				want += min(len(ovtestlib.Tokens(text)), 6)
			}
			assert.Equal(t, want, tokens, "texts past 6 tokens are cut at 6")
			assert.Equal(t, tc.runsOn, e.DeviceOf("embed"))

			reranked, err := r.Rerank(context.Background(), npu.RerankRequest{Model: "rerank", Query: "which device", Documents: docs})
			require.NoError(t, err)
			results, tokens := reranked.Results, reranked.PromptTokens
			require.Len(t, results, len(docs))
			want = 0
			for _, d := range docs {
				ids, _ := ovtestlib.RerankPair("which device", d)
				want += len(ids)
			}
			assert.Equal(t, want, tokens)
			assert.True(t, slices.IsSortedFunc(results, func(a, b npu.RerankResult) int { return -cmpFloat(a.Score, b.Score) }), "best first")
			for _, res := range results {
				assert.InDelta(t, ovtestlib.RerankScore("which device", docs[res.Index]), res.Score, 1e-6, "document %d", res.Index)
			}
			assert.Equal(t, tc.runsOn, e.DeviceOf("rerank"))

			_, err = r.Rerank(context.Background(), npu.RerankRequest{Model: "rerank", Query: "q", Documents: []string{"one two three four five six seven eight nine"}})
			var invalid *npu.InvalidRequestError
			require.ErrorAs(t, err, &invalid, "a pair of 13 tokens, past the model's 12")
			assert.Equal(t, "documents", invalid.Param)
		})
	}
}

func cmpFloat(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The NPU's shape: 4 rows of the model's length, at most 512.
func TestNPUStaticShapeIsTheModelsLengthBounded(t *testing.T) {
	for _, tc := range []struct {
		maxLength, want int
	}{
		{6, 6},
		{512, 512},
		{32768, 512},
	} {
		t.Run(strconv.Itoa(tc.maxLength), func(t *testing.T) {
			dir := modelsDir(t)
			ovtestlib.WriteEmbeddingModel(t, dir, "embed", tc.maxLength)
			ovtestlib.WriteRerankModel(t, dir, "rerank", tc.maxLength)
			e, _ := newTestEngine(t, "NPU", Config{Device: "NPU", ModelsDir: dir})
			for _, m := range []string{"embed", "rerank"} {
				require.NoError(t, e.Load(context.Background(), m))
				e.mu.Lock()
				p := e.pipelines[m]
				e.mu.Unlock()
				assert.Equal(t, embedShape{rows: npuEmbedBatch, length: tc.want}, p.embed.static, m)
				assert.Equal(t, tc.want, p.embed.cfg.MaxLength, "%s: texts are cut at the static length", m)
			}
			rr := e.pipelines["rerank"].rerank
			assert.Equal(t, tc.want, rr.budget+rr.specials(), "a longer pair is refused")
		})
	}
}

// An embedding or rerank model compiles on the NPU with the engine's
// CACHE_DIR, as the LLMs do: the first compile writes the blob, the next
// finds it.
func TestEncoderModelsCompileWithTheCacheDir(t *testing.T) {
	for _, model := range []string{"embed", "rerank"} {
		t.Run(model, func(t *testing.T) {
			dir, cache := modelsDir(t), t.TempDir()
			ovtestlib.WriteEmbeddingModel(t, dir, "embed", 8)
			ovtestlib.WriteRerankModel(t, dir, "rerank", 8)
			e, _ := newTestEngine(t, "NPU", Config{Device: "NPU", ModelsDir: dir, CacheDir: cache})
			require.NoError(t, e.Load(context.Background(), model))
			assert.False(t, testCoreCompileCached())
			blobs, err := filepath.Glob(filepath.Join(cache, "*.blob"))
			require.NoError(t, err)
			assert.Len(t, blobs, 1, "the compiled model's blob in CACHE_DIR")
			require.NoError(t, e.Unload(model))
			require.NoError(t, e.Load(context.Background(), model))
			assert.True(t, testCoreCompileCached(), "the second compile finds the blob")
		})
	}
}

// The test core is the NPU plugin in what static shapes need: it refuses
// to compile a model with dynamic shapes for the NPU, in the plugin's
// words, compiles it reshaped, and a static compiled model refuses an
// input of another shape, in the plugins' words (ovcore_test.c cites
// them). The CPU compiles either.
func TestTestCoreIsTheNPUPluginForStaticShapes(t *testing.T) {
	t.Setenv("OVTEST_DEVICES", "NPU,CPU")
	dir := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, dir, "embed", 8)
	folder := filepath.Join(dir, "embed")
	ir, err := modelstore.ReadEmbeddingIR(folder)
	require.NoError(t, err)

	_, err = testLib.compileEmbedding(filepath.Join(folder, "openvino_model.xml"), "NPU", ir, embedShape{})
	require.ErrorContains(t, err, "ov_core_compile_model")
	require.ErrorContains(t, err, "NPU does not support models with unbounded dynamic dimensions. Parameter 'input_ids' has dimension [0]")

	for _, tc := range []struct {
		name   string
		device string
		static bool
	}{
		{"static on the NPU", "NPU", true},
		{"dynamic on the CPU", "CPU", false},
		{"static on the CPU", "CPU", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := testLib.compilingEmbeddings(embedOptions{forceStatic: tc.static}).openEmbedder(context.Background(), folder, tc.device, ir)
			require.NoError(t, err)
			defer func() { require.NoError(t, e.close()) }()
			if tc.static {
				require.Equal(t, embedShape{rows: 4, length: 8}, e.static)
			}
			native := <-e.slot
			defer func() { e.slot <- native }()
			_, _, err = e.inferOnce(context.Background(), native, []int64{5, 6, 7, 8, 9, 10}, []int64{1, 1, 1, 1, 1, 1}, nil, 2, 3, modelstore.EmbeddingOutput, 3)
			switch {
			case tc.static && tc.device == "NPU":
				require.ErrorContains(t, err, "Failed to set tensor. The input tensor size is not equal to the model input type: got [2,3] expecting [4,8]")
			case tc.static:
				require.ErrorContains(t, err, "Can't set the input tensor with index: 0, because the model input (shape=[4,8]) and the tensor (shape=(2.3)) are incompatible")
			default:
				require.NoError(t, err)
			}
		})
	}
}

// Padding to the static shape changes nothing: the NPU's inference of a
// batch gives each real row's real positions exactly what the CPU's gives,
// for batches padded on the right (npud's) and on the left, of fewer rows
// than the static 4, as many, and more; and the padding goes on the
// batch's side, so a left-padded row still ends with its last token (what
// a model reading the last position needs).
func TestStaticInferenceKeepsTheRealRowsAndPositions(t *testing.T) {
	t.Setenv("OVTEST_DEVICES", "NPU,CPU")
	dir := t.TempDir()
	ovtestlib.WriteEmbeddingModel(t, dir, "embed", 8)
	ir, err := modelstore.ReadEmbeddingIR(filepath.Join(dir, "embed"))
	require.NoError(t, err)
	open := func(device string) *embedder {
		e, err := testLib.openEmbedder(context.Background(), filepath.Join(dir, "embed"), device, ir)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, e.close()) })
		return e
	}
	cpu, onNPU := open("CPU"), open("NPU")
	require.Equal(t, embedShape{rows: 4, length: 8}, onNPU.static)
	for _, tc := range []struct {
		name       string
		rows, cols int
		left       bool
	}{
		{"one row, right-padded", 1, 3, false},
		{"four rows, right-padded", 4, 5, false},
		{"nine rows, right-padded", 9, 8, false},
		{"three rows, left-padded", 3, 4, true},
		{"six rows, left-padded", 6, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := make([]int64, tc.rows*tc.cols)
			mask := make([]int64, tc.rows*tc.cols)
			for r := range tc.rows {
				n := 1 + (r+tc.cols-1)%tc.cols // 1..cols tokens, the last row at least
				if r == tc.rows-1 {
					n = tc.cols
				}
				for c := range n {
					at := r*tc.cols + c
					if tc.left {
						at = r*tc.cols + tc.cols - n + c
					}
					ids[at], mask[at] = int64(200+17*r+c), 1
				}
			}
			want, wantDims, err := cpu.infer(context.Background(), ids, mask, nil, tc.rows, tc.cols, modelstore.EmbeddingOutput, 3)
			require.NoError(t, err)
			got, dims, err := onNPU.infer(context.Background(), ids, mask, nil, tc.rows, tc.cols, modelstore.EmbeddingOutput, 3)
			require.NoError(t, err)
			assert.Equal(t, wantDims, dims)
			assert.Equal(t, want, got)
			// The last part's first row, as the model was given it.
			last := (tc.rows - 1) / 4 * 4
			if tc.left {
				assert.Equal(t, ids[last*tc.cols+tc.cols-1], testHook("ovtest_core_last_row0_last"), "a left-padded row ends at the static length")
			} else {
				assert.Equal(t, ids[last*tc.cols], testHook("ovtest_core_last_row0_first"), "a right-padded row starts at 0")
			}
		})
	}
	_, _, err = onNPU.infer(context.Background(), make([]int64, 9), make([]int64, 9), nil, 1, 9, modelstore.EmbeddingOutput, 3)
	require.ErrorContains(t, err, "more than the 8 the model was compiled for")
}
