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
	require.Equal(t, 60, rr.budget, "the tokenizer's 64 (model_max_length) less the pair's 4 special tokens")
	require.Equal(t, modelstore.Truncation{MaxLength: 62, Mode: "longest_first"}, rr.cut)

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
			out, err := rr.rerank(context.Background(), tc.query, tc.docs, false)
			require.NoError(t, err)
			got, total := out.Results, out.PromptTokens
			require.Zero(t, out.Truncated)
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
				alone, err := rr.rerank(context.Background(), tc.query, []string{tc.docs[w.Index]}, false)
				require.NoError(t, err)
				require.InDelta(t, w.Score, alone.Results[0].Score, 1e-5, "document %d alone", w.Index)
			}
		})
	}
	// A pair past the model's 64 positions is refused, not truncated,
	// unless truncation is asked for.
	_, err = rr.rerank(context.Background(), "hello", []string{"fine", strings.Repeat("The model here is tiny. ", 8)}, false)
	var long *TooLongPairError
	require.ErrorAs(t, err, &long)
	require.Equal(t, 1, long.Index)
	require.Equal(t, 64, long.Max)
	require.ErrorContains(t, err, "truncate")
}

// Issue 40: with truncation asked for, npud cuts a pair longer than the
// model takes exactly as TextRerankPipeline's tokenizer does (truncation
// on; openvino-tokenizers' Truncate, longest first, on the right, to the
// tokenizer's model_max_length less the pair's special tokens): the same
// tokens, so the same scores within 1e-5, for a long document, a long
// query, both long with an odd and an even share, and pairs just at and
// just over the length; every pair truncated is counted.
func TestOfficialRerankTruncatesAsTextRerankPipeline(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	ir, err := modelstore.ReadRerankIR(tinyRerankFolder)
	require.NoError(t, err)
	rr, err := lib.openReranker(context.Background(), tinyRerankFolder, "CPU", ir)
	require.NoError(t, err)
	defer func() { require.NoError(t, rr.close()) }()
	// " a" is one token of the tiny tokenizer, " b" too: texts of exact lengths.
	words := func(w string, n int) string { return strings.Repeat(w, n) }
	for _, tc := range []struct {
		name      string
		query     string
		docs      []string
		truncated int
	}{
		{"long documents", "Which runtime runs the model?", []string{
			strings.Repeat("The model here is tiny. ", 8), "short", words(" a", 200), words(" a", 31),
		}, 2},
		{"a long query", words(" b", 90), []string{words(" a", 3), words(" a", 29), words(" a", 30), words(" a", 45)}, 4},
		{"both long", words(" b", 45), []string{words(" a", 44), words(" a", 45), words(" a", 46), words(" a", 31)}, 4},
		{"at the length", words(" b", 30), []string{words(" a", 30), words(" a", 29), words(" a", 31)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rr.rerank(context.Background(), tc.query, tc.docs, true)
			require.NoError(t, err)
			want, tokens := genaiRerank(t, venv, tinyRerankFolder, tc.query, tc.docs)
			sum := 0
			for _, n := range tokens {
				sum += n
				require.LessOrEqual(t, n, 64, "GenAI truncates to the model's length")
			}
			require.Equal(t, sum, out.PromptTokens, "the tokens the model was given, as GenAI truncates them (%v)", tokens)
			require.Equal(t, tc.truncated, out.Truncated)
			require.Len(t, out.Results, len(want))
			for i := range want {
				require.Equal(t, want[i].Index, out.Results[i].Index, "rank %d", i)
				require.InDelta(t, want[i].Score, out.Results[i].Score, 1e-5, "rank %d", i)
			}
		})
	}
}

// truncatePair's shares, for every mode and side of openvino-tokenizers'
// Truncate (src/truncate.cpp), with a budget of 10 (and 9 for the odd
// token).
func TestTruncatePair(t *testing.T) {
	seq := func(base, n int) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(base + i)
		}
		return s
	}
	for _, tc := range []struct {
		name           string
		budget, nq, nd int
		cut            modelstore.Truncation
		wantQ, wantD   []int64
	}{
		{"fits", 10, 4, 6, modelstore.Truncation{Mode: "longest_first"}, seq(100, 4), seq(200, 6)},
		{"a long document", 10, 2, 9, modelstore.Truncation{Mode: "longest_first"}, seq(100, 2), seq(200, 8)},
		{"a long query", 10, 9, 2, modelstore.Truncation{Mode: "longest_first"}, seq(100, 8), seq(200, 2)},
		{"both long: halves", 10, 7, 12, modelstore.Truncation{Mode: "longest_first"}, seq(100, 5), seq(200, 5)},
		{"odd: the longer document gets the token", 9, 7, 12, modelstore.Truncation{Mode: "longest_first"}, seq(100, 4), seq(200, 5)},
		{"odd: the query on a tie", 9, 8, 8, modelstore.Truncation{Mode: "longest_first"}, seq(100, 5), seq(200, 4)},
		{"odd: neither under half, the longer gets the token", 9, 5, 6, modelstore.Truncation{Mode: "longest_first"}, seq(100, 4), seq(200, 5)},
		{"left keeps the ends", 10, 2, 9, modelstore.Truncation{Mode: "longest_first", Left: true}, seq(100, 2), seq(201, 8)},
		{"left, both long", 10, 7, 12, modelstore.Truncation{Mode: "longest_first", Left: true}, seq(102, 5), seq(207, 5)},
		{"only_second", 10, 3, 12, modelstore.Truncation{Mode: "only_second"}, seq(100, 3), seq(200, 10)},
		{"only_first", 10, 12, 3, modelstore.Truncation{Mode: "only_first"}, seq(100, 10), seq(200, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, d := truncatePair(seq(100, tc.nq), seq(200, tc.nd), tc.budget, tc.cut)
			require.Equal(t, tc.wantQ, q)
			require.Equal(t, tc.wantD, d)
		})
	}
}
