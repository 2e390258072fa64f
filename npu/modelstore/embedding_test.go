package modelstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
)

// irWith is an IR's XML with the given Parameters' tensor names and one
// more layer whose output is named output.
func irWith(output string, inputs ...string) string {
	xml := `<?xml version="1.0"?>` + "\n" + `<net name="m" version="11"><layers>`
	for i, in := range inputs {
		xml += `<layer id="` + string(rune('0'+i)) + `" name="` + in + `" type="Parameter" version="opset1"><data shape="?,?" element_type="i64"/>` +
			`<output><port id="0" precision="I64" names="` + in + `"><dim>-1</dim></port></output></layer>`
	}
	xml += `<layer id="9" name="h" type="Tanh" version="opset1"><input><port id="0"/></input><output><port id="1" precision="FP32" names="` + output + `"/></output></layer>`
	return xml + `<layer id="10" name="out" type="Result" version="opset1"><input><port id="0"/></input></layer></layers></net>`
}

func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// Issue 40: which folders are embedding models, from their IR alone.
func TestReadEmbeddingIR(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		inputs []string // nil: not an embedding model
	}{
		{"BERT export", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask", "token_type_ids")},
			[]string{"input_ids", "attention_mask", "token_type_ids"}},
		{"without token types (Qwen3-Embedding)", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask")},
			[]string{"input_ids", "attention_mask"}},
		{"a language model's export", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask", "position_ids", "beam_idx")}, nil},
		{"a language model with last_hidden_state", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask", "position_ids")}, nil},
		{"a cross-encoder (logits)", map[string]string{"openvino_model.xml": irWith("logits", "input_ids", "attention_mask", "token_type_ids")}, nil},
		{"no attention mask", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids")}, nil},
		{"a speech model", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask"),
			WhisperEncoderIR: "<net/>", WhisperDecoderIR: "<net/>"}, nil},
		{"a vision model", map[string]string{"openvino_model.xml": irWith("last_hidden_state", "input_ids", "attention_mask"),
			"openvino_vision_embeddings_model.xml": "<net/>"}, nil},
		{"the test library's stand-in", map[string]string{"openvino_model.xml": "<net/>"}, nil},
		{"not XML", map[string]string{"openvino_model.xml": "<net><layer"}, nil},
		{"no IR", map[string]string{"config.json": "{}"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFolder(t, tc.files)
			ir, err := ReadEmbeddingIR(dir)
			if tc.inputs == nil {
				require.Error(t, err)
				assert.False(t, IsEmbeddingModel(dir))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.inputs, ir.Inputs)
			assert.True(t, IsEmbeddingModel(dir))
		})
	}
}

// Issue 40: pooling and normalisation from sentence-transformers' files,
// GenAI's defaults without them, and the length a text is cut at.
func TestReadEmbeddingConfig(t *testing.T) {
	const normalized = `[{"path": "", "type": "sentence_transformers.models.Transformer"},
		{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		{"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]`
	const plain = `[{"path": "", "type": "sentence_transformers.models.Transformer"},
		{"path": "pool", "type": "sentence_transformers.models.Pooling"}]`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  EmbeddingConfig
		err   string
	}{
		{"no files: GenAI's defaults", nil, EmbeddingConfig{Pooling: PoolCLS, Normalize: true}, ""},
		{"bge: CLS, normalised, 512", map[string]string{"modules.json": normalized, "config.json": `{"max_position_embeddings": 512}`,
			"1_Pooling/config.json": `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`},
			EmbeddingConfig{Pooling: PoolCLS, Normalize: true, MaxLength: 512}, ""},
		{"MiniLM: mean, max_seq_length under the positions", map[string]string{"modules.json": normalized,
			"config.json": `{"max_position_embeddings": 512}`, "sentence_bert_config.json": `{"max_seq_length": 256}`,
			"1_Pooling/config.json": `{"pooling_mode_mean_tokens": true}`},
			EmbeddingConfig{Pooling: PoolMean, Normalize: true, MaxLength: 256}, ""},
		{"Qwen3-Embedding: last token", map[string]string{"modules.json": normalized,
			"1_Pooling/config.json": `{"pooling_mode_lasttoken": true, "include_prompt": true}`},
			EmbeddingConfig{Pooling: PoolLastToken, Normalize: true}, ""},
		{"no Normalize module, the pooling folder modules.json names", map[string]string{"modules.json": plain,
			"pool/config.json": `{"pooling_mode_mean_tokens": true}`, "1_Pooling/config.json": `{"pooling_mode_cls_token": true}`},
			EmbeddingConfig{Pooling: PoolMean}, ""},
		{"max pooling", map[string]string{"1_Pooling/config.json": `{"pooling_mode_max_tokens": true}`}, EmbeddingConfig{}, "does not implement"},
		{"two modes", map[string]string{"1_Pooling/config.json": `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`},
			EmbeddingConfig{}, "2 pooling modes"},
		{"no mode", map[string]string{"1_Pooling/config.json": `{"pooling_mode_cls_token": false}`}, EmbeddingConfig{}, "0 pooling modes"},
		{"a pooling folder outside", map[string]string{"modules.json": `[{"path": "../x", "type": "sentence_transformers.models.Pooling"}]`},
			EmbeddingConfig{}, "outside"},
		{"modules.json not JSON", map[string]string{"modules.json": `[`}, EmbeddingConfig{}, "modules.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadEmbeddingConfig(writeFolder(t, tc.files))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Issue 40: an embedding model is listed with the capability "embedding"
// alone, its context what it was trained for; the tiny chat model beside
// it is not one.
func TestScanListsEmbeddingModels(t *testing.T) {
	models := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(models, "tinyembed"), os.DirFS("../../testdata/openvino/tinyembed/model")))
	require.NoError(t, os.CopyFS(filepath.Join(models, "tiny"), os.DirFS("../../testdata/openvino/tinymodel/model")))
	c, err := OpenCatalog(New(models, nil), FixedContext(4096))
	require.NoError(t, err)
	list := c.Models()
	require.Len(t, list, 2)
	assert.Equal(t, "tiny", list[0].ID)
	assert.False(t, list[0].Details.EmbeddingOnly)
	assert.Equal(t, []string{"completion", "tools", "thinking"}, npu.Capabilities(list[0]))
	m := list[1]
	assert.True(t, m.Details.EmbeddingOnly)
	assert.Equal(t, []string{"embedding"}, npu.Capabilities(m))
	assert.Equal(t, 64, m.ContextLength, "max_position_embeddings")
	assert.Equal(t, 32, m.Details.EmbeddingLength)
	require.ErrorContains(t, npu.CheckGenerates(m), "is an embedding model")
}
