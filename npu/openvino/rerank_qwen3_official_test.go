//go:build cgo

package openvino

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/modelstore"
)

// tinyQwen3RerankFolder is the project's tiny Qwen3-style reranker in its
// sequence-classification form (testdata/openvino/tinyqwen3rerank).
const tinyQwen3RerankFolder = "../../testdata/openvino/tinyqwen3rerank/model"

// Issue 40: a Qwen3 reranker (sequence-classification form) ranks as the
// official TextRerankPipeline ranks the same text: npud frames a raw query
// and raw documents with the Qwen3-Reranker prompt (as GenAI's tests frame
// them before the pipeline), takes a query the client framed as it is,
// pads a batch on the tokenizer's side (left) with its pad id (the tiny
// classifier reads its last token by that id, and its positions from the
// row's start, so other padding changes the scores), and truncates the
// text at the tokenizer's length only when asked: same order, scores within
// 1e-5, same token counts.
func TestOfficialQwen3RerankMatchesTextRerankPipeline(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	ir, err := modelstore.ReadRerankIR(tinyQwen3RerankFolder)
	require.NoError(t, err)
	rr, err := lib.openReranker(context.Background(), tinyQwen3RerankFolder, "CPU", ir)
	require.NoError(t, err)
	defer func() { require.NoError(t, rr.close()) }()
	require.True(t, rr.qwen3)
	require.Equal(t, 256, rr.budget, "the tokenizer's model_max_length, no special tokens")
	require.Equal(t, modelstore.Padding{Left: true}, rr.pad)

	framed := qwen3RerankSystem + "<Instruct>: Find the runtime\n<Query>: Which runtime runs the model?\n"
	for _, tc := range []struct {
		name      string
		query     string
		docs      []string
		truncate  bool
		truncated int
	}{
		{"raw", "Which runtime runs the model?", []string{
			"OpenVINO runs the model on the NPU.", "a", "Emoji and accents: café, naïve, 東京, 🙂.",
			"The model here is tiny. The model here is tiny.", "Tools are functions a model may call.",
		}, false, 0},
		{"framed by the client", framed, []string{
			"<Document>: hello" + qwen3RerankAnswer, "<Document>: the model here is tiny" + qwen3RerankAnswer,
		}, false, 0},
		{"truncated", "hello world", []string{"short", strings.Repeat("The model here is tiny. ", 20), "world"}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rr.rerank(context.Background(), tc.query, tc.docs, tc.truncate)
			require.NoError(t, err)
			want, tokens := genaiRerank(t, venv, tinyQwen3RerankFolder, tc.query, tc.docs)
			sum := 0
			for _, n := range tokens {
				sum += n
			}
			require.Equal(t, sum, out.PromptTokens, "the tokens the model was given (%v)", tokens)
			require.Equal(t, tc.truncated, out.Truncated)
			require.Len(t, out.Results, len(want))
			for i := range want {
				require.Equal(t, want[i].Index, out.Results[i].Index, "rank %d", i)
				require.InDelta(t, want[i].Score, out.Results[i].Score, 1e-5, "rank %d", i)
			}
		})
	}
	_, err = rr.rerank(context.Background(), "hello world", []string{"short", strings.Repeat("The model here is tiny. ", 20)}, false)
	var long *TooLongPairError
	require.ErrorAs(t, err, &long)
	require.Equal(t, 1, long.Index)
	require.Equal(t, 256, long.Max)
}
