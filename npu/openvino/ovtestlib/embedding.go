package ovtestlib

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EmbeddingWidth is the length of the test library's embedding model's
// vectors (OVTEST_EMBED_WIDTH in testdata/ovgenai/ovtest.h).
const EmbeddingWidth = 4

// embeddingIR is an IR with an embedding model's inputs and output, as
// npud tells them apart (modelstore.ReadEmbeddingIR); the test core runs
// it as its embedding model.
const embeddingIR = `<?xml version="1.0"?>
<net name="embed" version="11"><layers>
<layer id="0" name="input_ids" type="Parameter" version="opset1"><output><port id="0" precision="I64" names="input_ids"/></output></layer>
<layer id="1" name="attention_mask" type="Parameter" version="opset1"><output><port id="0" precision="I64" names="attention_mask"/></output></layer>
<layer id="2" name="h" type="Tanh" version="opset1"><output><port id="1" precision="FP32" names="last_hidden_state"/></output></layer>
<layer id="3" name="out" type="Result" version="opset1"/>
</layers></net>
`

// WriteEmbeddingModel makes an embedding model folder the test library
// runs: its IR, a tokenizer, mean pooling and L2 normalisation
// (sentence-transformers' files), and maxLength positions.
func WriteEmbeddingModel(t testing.TB, models, name string, maxLength int) {
	t.Helper()
	dir := filepath.Join(models, name)
	files := map[string]string{
		"openvino_model.xml": embeddingIR, "openvino_model.bin": "w", "openvino_tokenizer.xml": "<net/>",
		"config.json":           `{"model_type": "bert", "hidden_size": 4, "max_position_embeddings": ` + strconv.Itoa(maxLength) + `}`,
		"1_Pooling/config.json": `{"pooling_mode_mean_tokens": true}`,
		"modules.json": `[{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
			{"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]`,
	}
	for f, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Tokens are the test tokenizer's ids of text (ovtest_tokenize): one a
// word, from an FNV-1a-style hash of its bytes (its start value is
// ovtest_tokenize's, not FNV's).
func Tokens(text string) []int64 {
	var ids []int64
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }) {
		h := uint64(1469598103934665603)
		for _, c := range []byte(w) {
			h = (h ^ uint64(c)) * 1099511628211
		}
		ids = append(ids, 100+int64(h%50000))
	}
	return ids
}

// Embedding is what npud makes of text with the model WriteEmbeddingModel
// writes: the test core's hidden states of its first maxLength tokens
// (ovtest_hidden), their mean, L2-normalised.
func Embedding(text string, maxLength int) []float32 {
	ids := Tokens(text)
	ids = ids[:min(len(ids), maxLength)]
	sum := make([]float64, EmbeddingWidth)
	for _, id := range ids {
		for k := range sum {
			sum[k] += float64(float32(id*int64(2*k+3)%101)/101 - 0.5)
		}
	}
	var sq float64
	for k := range sum {
		sum[k] /= float64(len(ids))
		sq += sum[k] * sum[k]
	}
	out := make([]float32, EmbeddingWidth)
	for k, v := range sum {
		out[k] = float32(v / math.Sqrt(math.Max(sq, 1e-12)))
	}
	return out
}
