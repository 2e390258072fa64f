//go:build cgo

package openvino

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu/modelstore"
)

// tinyEmbedFolder is the project's tiny embedding model
// (testdata/openvino/tinyembed): mean pooling, L2 normalised.
const tinyEmbedFolder = "../../testdata/openvino/tinyembed/model"

// tinyEmbedVariant copies the tiny embedding model into a new folder whose
// sentence-transformers files choose pooling (sentence-transformers' mode
// name) and, with normalize, a Normalize module.
func tinyEmbedVariant(t testing.TB, mode string, normalize bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tinyembed-"+mode)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755))
	for _, name := range []string{"openvino_model.xml", "openvino_model.bin", "openvino_tokenizer.xml", "openvino_tokenizer.bin", "config.json"} {
		b, err := os.ReadFile(filepath.Join(tinyEmbedFolder, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	pooling := map[string]any{"word_embedding_dimension": 32}
	for _, m := range []string{"cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"} {
		pooling["pooling_mode_"+m] = m == mode
	}
	modules := []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
	}
	if normalize {
		modules = append(modules, map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
	}
	for name, v := range map[string]any{"1_Pooling/config.json": pooling, "modules.json": modules} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	return dir
}

// genaiEmbeddings asks the official TextEmbeddingPipeline
// (testdata/openvino/tinyembed/genai_embed.py) for the vectors of texts,
// and for the tokens its tokenizer gives each.
func genaiEmbeddings(t testing.TB, venv, folder string, cfg modelstore.EmbeddingConfig, texts []string) (vectors [][]float64, tokens []int) {
	t.Helper()
	in, err := json.Marshal(map[string]any{"texts": texts, "pooling": cfg.Pooling, "normalize": cfg.Normalize, "max_length": cfg.MaxLength})
	require.NoError(t, err)
	script := filepath.Join("..", "..", "testdata", "openvino", "tinyembed", "genai_embed.py")
	cmd := exec.CommandContext(context.Background(), filepath.Join(venv, "bin", "python"), script, folder)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	var got struct {
		Vectors [][]float64
		Tokens  []int
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.Vectors, len(texts))
	return got.Vectors, got.Tokens
}

// embedTexts are the differential test's inputs: short and long, one past
// the tiny model's 64 positions (truncated), accents, CJK and emoji, and
// lengths that differ within the batch, so padding and the mask matter.
var embedTexts = []string{
	"hello world",
	"npud serves local language models to Ollama and OpenAI clients.",
	"a",
	"Emoji and accents: café, naïve, 東京, 🙂.",
	strings.Repeat("The model here is tiny and its weights are random. ", 8),
	"Tools are functions a model may call; it writes a call as JSON.",
}

// Issue 40: npud's vectors, through OpenVINO's core C API, equal the
// official TextEmbeddingPipeline's on the same folder for every pooling
// kind, normalised and not, within 1e-5 and a cosine of at least 0.99999;
// and npud counts each text's tokens as GenAI's tokenizer gives them.
func TestOfficialEmbeddingsMatchTextEmbeddingPipeline(t *testing.T) {
	venv, lib := realTokenizerCore(t)
	require.Nil(t, lib.api.embed_missing, "the 2026.4.1 core has every function an embedding model needs")
	for _, tc := range []struct {
		mode      string
		normalize bool
		pooling   modelstore.Pooling
		bosEOS    bool // a tokenizer that adds BOS and EOS around every text
	}{
		{"cls_token", true, modelstore.PoolCLS, false},
		{"mean_tokens", true, modelstore.PoolMean, false},
		{"lasttoken", true, modelstore.PoolLastToken, false},
		{"cls_token", false, modelstore.PoolCLS, false},
		{"mean_tokens", false, modelstore.PoolMean, false},
		{"lasttoken", false, modelstore.PoolLastToken, false},
		{"cls_token", true, modelstore.PoolCLS, true},
		{"mean_tokens", true, modelstore.PoolMean, true},
		{"lasttoken", true, modelstore.PoolLastToken, true},
	} {
		t.Run(fmt.Sprintf("%s/normalize=%v/bos-eos=%v", tc.mode, tc.normalize, tc.bosEOS), func(t *testing.T) {
			dir := tinyEmbedVariant(t, tc.mode, tc.normalize)
			if tc.bosEOS {
				// The tiny chat model's tokenizer is the embedding model's.
				special := withSpecialTokens(t, venv)
				for _, name := range []string{"openvino_tokenizer.xml", "openvino_tokenizer.bin"} {
					b, err := os.ReadFile(filepath.Join(special, name))
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
				}
			}
			ir, err := modelstore.ReadEmbeddingIR(dir)
			require.NoError(t, err)
			emb, err := lib.openEmbedder(context.Background(), dir, "CPU", ir)
			require.NoError(t, err)
			defer func() { require.NoError(t, emb.close()) }()
			require.Equal(t, tc.pooling, emb.cfg.Pooling)
			require.Equal(t, tc.normalize, emb.cfg.Normalize)
			require.Equal(t, 64, emb.cfg.MaxLength, "config.json's max_position_embeddings")

			embedded, err := emb.embed(context.Background(), embedTexts, true)
			require.NoError(t, err)
			got, total := embedded.Vectors, embedded.PromptTokens
			require.Equal(t, 1, embedded.Truncated, "the text past the model's length")
			want, tokens := genaiEmbeddings(t, venv, dir, emb.cfg, embedTexts)
			sum := 0
			for _, n := range tokens {
				sum += n
			}
			require.Equal(t, sum, total, "the tokens the model was given, as GenAI's tokenizer counts them (%v)", tokens)
			require.Contains(t, tokens, 64, "one text is truncated at the model's length")
			for i := range embedTexts {
				requireSameVector(t, want[i], got[i], "input %d", i)
				if tc.normalize {
					require.InDelta(t, 1, norm(got[i]), 1e-5, "input %d is L2-normalised", i)
				}
			}
			// One at a time (no padding) gives the same vectors as the batch.
			for i, text := range embedTexts {
				alone, err := emb.embed(context.Background(), []string{text}, true)
				require.NoError(t, err)
				requireSameVector(t, want[i], alone.Vectors[0], "input %d alone", i)
			}
		})
	}
}

func requireSameVector(t testing.TB, want []float64, got []float32, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgAndArgs...)
	var dot, nw, ng float64
	for j := range want {
		require.InDelta(t, want[j], float64(got[j]), 1e-5, msgAndArgs...)
		dot += want[j] * float64(got[j])
		nw += want[j] * want[j]
		ng += float64(got[j]) * float64(got[j])
	}
	require.GreaterOrEqual(t, dot/math.Sqrt(nw*ng), 0.99999, msgAndArgs...)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
