package modelstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// Issue 40: which folders are rerank models, from their IR alone: the
// output (logits, not last_hidden_state) tells a cross-encoder from an
// embedding model, the inputs from a language model.
func TestReadRerankIR(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		inputs []string // nil: not a rerank model
	}{
		{"BERT cross-encoder", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask", "token_type_ids")},
			[]string{"input_ids", "attention_mask", "token_type_ids"}},
		{"XLM-RoBERTa cross-encoder (bge-reranker)", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask")},
			[]string{"input_ids", "attention_mask"}},
		{"an embedding model", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask")}, nil},
		{"a language model's export (Qwen3-Reranker causal LM)", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask", "position_ids", "beam_idx")}, nil},
		{"no attention mask", map[string]string{"openvino_model.xml": irWith("logits", "input_ids")}, nil},
		{"a vision model", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask"),
			"openvino_vision_embeddings_model.xml": "<net/>"}, nil},
		{"no IR", map[string]string{"config.json": "{}"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFolder(t, tc.files)
			ir, err := ReadRerankIR(dir)
			if tc.inputs == nil {
				require.Error(t, err)
				assert.False(t, IsRerankModel(dir))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.inputs, ir.Inputs)
			assert.True(t, IsRerankModel(dir))
			assert.False(t, IsEmbeddingModel(dir))
		})
	}
}

// Issue 40: the pair template openvino-tokenizers writes (BERT's: CLS A
// SEP B SEP, token types 0 then 1), and tokenizers that cannot pair.
func TestReadPairTemplate(t *testing.T) {
	tokenizer := func(template string) map[string]string {
		return map[string]string{"openvino_tokenizer.xml": `<net><rt_info><processed_post_processor_template value="` + template + `" /></rt_info></net>`}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  *PairTemplate
	}{
		{"BERT", tokenizer(`{&quot;single&quot;: {&quot;ids&quot;: [101, -1, 102], &quot;type_ids&quot;: [0, 0, 0]}, &quot;pair&quot;: {&quot;ids&quot;: [101, -1, 102, -2, 102], &quot;type_ids&quot;: [0, 0, 0, 1, 1]}}`),
			&PairTemplate{Ids: []int64{101, -1, 102, -2, 102}, TypeIDs: []int64{0, 0, 0, 1, 1}, SingleSpecials: 2}},
		{"no pair", tokenizer(`{&quot;single&quot;: {&quot;ids&quot;: [-1], &quot;type_ids&quot;: [0]}}`), nil},
		{"type ids missing", tokenizer(`{&quot;pair&quot;: {&quot;ids&quot;: [-1, -2]}}`), nil},
		{"two documents", tokenizer(`{&quot;pair&quot;: {&quot;ids&quot;: [-1, -2, -2], &quot;type_ids&quot;: [0, 1, 1]}}`), nil},
		{"not JSON", tokenizer(`{`), nil},
		{"no template", map[string]string{"openvino_tokenizer.xml": `<net><rt_info/></net>`}, nil},
		{"no tokenizer", map[string]string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadPairTemplate(writeFolder(t, tc.files))
			if tc.want == nil {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, *tc.want, got)
		})
	}
	got, err := ReadPairTemplate("../../testdata/openvino/tinyrerank/model")
	require.NoError(t, err)
	assert.Equal(t, PairTemplate{Ids: []int64{1, -1, 2, 2, -2, 2}, TypeIDs: []int64{0, 0, 0, 0, 0, 0}, SingleSpecials: 2}, got,
		"the tiny tokenizer: XLM-RoBERTa's <s> A </s></s> B </s>, with <|im_start|> (1) and <|im_end|> (2)")
	assert.Equal(t, 4, got.Specials())
}

// Issue 40: how a tokenizer truncates, from its Truncate operation: the
// tiny rerank model's (model_max_length 64 less the 2 special tokens around
// one text, on the right, longest first) and the tiny chat model's, which
// has no model_max_length and so no bound.
func TestReadTruncation(t *testing.T) {
	got, err := ReadTruncation("../../testdata/openvino/tinyrerank/model")
	require.NoError(t, err)
	assert.Equal(t, Truncation{MaxLength: 62, Mode: "longest_first"}, got)
	got, err = ReadTruncation("../../testdata/openvino/tinymodel/model")
	require.NoError(t, err)
	assert.Equal(t, Truncation{Mode: "longest_first"}, got, "no model_max_length: no bound")
	_, err = ReadTruncation(writeFolder(t, map[string]string{"openvino_tokenizer.xml": `<net><layers/></net>`}))
	require.ErrorIs(t, err, ErrNoTruncation)
}

// Issue 40: how a tokenizer pads a batch, from its RaggedToDense: the tiny
// cross-encoder's on the right, the tiny Qwen3 reranker's on the left (as
// its padding_side says), both with <|endoftext|> (0).
func TestReadPadding(t *testing.T) {
	got, err := ReadPadding("../../testdata/openvino/tinyrerank/model")
	require.NoError(t, err)
	assert.Equal(t, Padding{}, got)
	got, err = ReadPadding("../../testdata/openvino/tinyqwen3rerank/model")
	require.NoError(t, err)
	assert.Equal(t, Padding{Left: true}, got)
	_, err = ReadPadding(writeFolder(t, map[string]string{"openvino_tokenizer.xml": `<net><layers/></net>`}))
	require.Error(t, err)
}

// Issue 40: a rerank model is listed with the capability "rerank" alone,
// its context what it was trained for, and takes no chat.
func TestScanListsRerankModels(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(models, "tinyrerank"), os.DirFS("../../testdata/openvino/tinyrerank/model")))
	c, err := OpenCatalog(New(models, nil), FixedContext(4096))
	require.NoError(t, err)
	list := c.Models()
	require.Len(t, list, 1)
	m := list[0]
	assert.True(t, m.Details.RerankOnly)
	assert.False(t, m.Details.EmbeddingOnly)
	assert.Equal(t, []string{"rerank"}, npu.Capabilities(m))
	assert.Equal(t, 64, m.ContextLength, "max_position_embeddings")
	require.ErrorContains(t, npu.CheckGenerates(m), "is a rerank model")
}
