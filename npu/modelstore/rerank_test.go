package modelstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
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

// truncateIR is a tokenizer IR with one Truncate of inputs ragged inputs
// whose length comes from a constant (directly, or through a Select when
// selected), with its side and mode, and the .bin holding them.
func truncateIR(inputs int, length int32, selected bool, side, mode string) map[string]string {
	bin := binary.LittleEndian.AppendUint32(nil, uint32(length))
	bin = append(append(bin, side...), mode...)
	layer := func(id, kind, data string) string {
		return `<layer id="` + id + `" type="` + kind + `"><data ` + data + `/></layer>`
	}
	n := strconv.Itoa(3 * inputs)
	xml := `<net><layers>` +
		layer("1", "Const", `element_type="i32" shape="" offset="0" size="4"`) +
		layer("2", "Const", `element_type="u8" shape="`+strconv.Itoa(len(side))+`" offset="4" size="`+strconv.Itoa(len(side))+`"`) +
		layer("3", "Const", `element_type="u8" shape="`+strconv.Itoa(len(mode))+`" offset="`+strconv.Itoa(4+len(side))+`" size="`+strconv.Itoa(len(mode))+`"`) +
		layer("4", "Select", ``) +
		layer("9", "Truncate", `m_num_inputs="`+strconv.Itoa(inputs)+`"`) + `</layers><edges>`
	if selected {
		xml += `<edge from-layer="1" from-port="0" to-layer="4" to-port="1"/><edge from-layer="4" from-port="3" to-layer="9" to-port="` + n + `"/>`
	} else {
		xml += `<edge from-layer="1" from-port="0" to-layer="9" to-port="` + n + `"/>`
	}
	xml += `<edge from-layer="2" from-port="0" to-layer="9" to-port="` + strconv.Itoa(3*inputs+1) + `"/>` +
		`<edge from-layer="3" from-port="0" to-layer="9" to-port="` + strconv.Itoa(3*inputs+2) + `"/></edges></net>`
	return map[string]string{"openvino_tokenizer.xml": xml, "openvino_tokenizer.bin": string(bin)}
}

// Issue 40: ReadTruncation reads the Truncate's length constant directly or
// through the truncation state's Select, its side and mode, and takes a
// length near 2^31 (no model_max_length) as no bound.
func TestReadTruncationForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  *Truncation // nil: ErrNoTruncation
	}{
		{"through the Select", truncateIR(1, 510, true, "right", "longest_first"), &Truncation{MaxLength: 510, Mode: "longest_first"}},
		{"a constant, pair inputs", truncateIR(2, 508, false, "right", "longest_first"), &Truncation{MaxLength: 508, Mode: "longest_first"}},
		{"left", truncateIR(1, 62, true, "left", "longest_first"), &Truncation{MaxLength: 62, Left: true, Mode: "longest_first"}},
		{"only_second", truncateIR(1, 62, true, "right", "only_second"), &Truncation{MaxLength: 62, Mode: "only_second"}},
		{"no model_max_length", truncateIR(1, 1<<31-1-2, true, "right", "longest_first"), &Truncation{Mode: "longest_first"}},
		{"an unknown side", truncateIR(1, 62, true, "middle", "longest_first"), nil},
		{"an unknown mode", truncateIR(1, 62, true, "right", "shortest_first"), nil},
		{"a negative length", truncateIR(1, -5, true, "right", "longest_first"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadTruncation(writeFolder(t, tc.files))
			if tc.want == nil {
				require.ErrorIs(t, err, ErrNoTruncation)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, *tc.want, got)
		})
	}
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
