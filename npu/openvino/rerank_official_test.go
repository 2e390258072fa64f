//go:build cgo

package openvino

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// tinyRerankFolder is the project's tiny cross-encoder
// (testdata/openvino/tinyrerank).
const tinyRerankFolder = "../../testdata/openvino/tinyrerank/model"

// genaiRerank asks the official TextRerankPipeline
// (testdata/openvino/tinyrerank/genai_rerank.py) to rank every document,
// and for the tokens of each query/document pair.
func genaiRerank(t testing.TB, venv, folder, query string, docs []string) (results []npu.RerankResult, tokens []int) {
	t.Helper()
	in, err := json.Marshal(map[string]any{"query": query, "documents": docs})
	require.NoError(t, err)
	script := filepath.Join("..", "..", "testdata", "openvino", "tinyrerank", "genai_rerank.py")
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), script, folder)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var got struct {
		Results [][2]float64
		Tokens  []int
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.Results, len(docs))
	for _, r := range got.Results {
		results = append(results, npu.RerankResult{Index: int(r[0]), Score: float32(r[1])})
	}
	return results, got.Tokens
}

// Issue 40: npud's rerank order and scores, through OpenVINO's core C
// API, equal the official TextRerankPipeline's on the same folder within
// 1e-5, for queries and documents of different lengths (so padding and
// the mask matter), and npud counts the pairs' tokens as GenAI's tokenizer
// pairs them.
func TestOfficialRerankMatchesTextRerankPipeline(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	ir, err := modelstore.ReadRerankIR(tinyRerankFolder)
	require.NoError(t, err)
	require.False(t, modelstore.IsEmbeddingModel(tinyRerankFolder), "logits, not last_hidden_state: not an embedding model")
	rr, err := lib.openReranker(context.Background(), tinyRerankFolder, "CPU", ir)
	require.NoError(t, err)
	defer func() { require.NoError(t, rr.close()) }()
	require.Equal(t, 64, rr.maxLength, "config.json's max_position_embeddings")

	for _, tc := range []struct {
		query string
		docs  []string
	}{
		{"hello world", []string{"npud serves", "hello", "a b c", "world hello"}},
		{"Which runtime runs the model?", []string{
			"OpenVINO runs the model on the NPU.",
			"a",
			"Emoji and accents: café, naïve, 東京, 🙂.",
			strings.Repeat("The model here is tiny. ", 2),
			"Tools are functions a model may call.",
		}},
		{"x", []string{"only one document"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got, total, err := rr.rerank(context.Background(), tc.query, tc.docs)
			require.NoError(t, err)
			want, tokens := genaiRerank(t, venv, tinyRerankFolder, tc.query, tc.docs)
			sum := 0
			for _, n := range tokens {
				sum += n
			}
			require.Equal(t, sum, total, "the pairs' tokens, as GenAI's tokenizer counts them (%v)", tokens)
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].Index, got[i].Index, "rank %d", i)
				require.InDelta(t, want[i].Score, got[i].Score, 1e-5, "rank %d", i)
			}
			// One at a time (no padding) gives the same scores as the batch.
			for _, w := range want {
				alone, _, err := rr.rerank(context.Background(), tc.query, []string{tc.docs[w.Index]})
				require.NoError(t, err)
				require.InDelta(t, w.Score, alone[0].Score, 1e-5, "document %d alone", w.Index)
			}
		})
	}
	// A pair past the model's 64 positions is refused, not truncated.
	_, _, err = rr.rerank(context.Background(), "hello", []string{"fine", strings.Repeat("The model here is tiny. ", 8)})
	var long *TooLongPairError
	require.ErrorAs(t, err, &long)
	require.Equal(t, 1, long.Index)
	require.Equal(t, 64, long.Max)
}
