package modelstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// Qwen2.5-1.5B-Instruct's shapes (its published config.json); it has
// 1.54 billion parameters.
const qwen15Config = `{"model_type":"qwen2","hidden_size":1536,"num_hidden_layers":28,"num_attention_heads":12,
"num_key_value_heads":2,"intermediate_size":8960,"vocab_size":151936,"max_position_embeddings":32768,"tie_word_embeddings":true}`

// Issue 17: /api/show and `ollama show` read the architecture, parameters,
// context and embedding length and quantization of a model; they come
// from its folder.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model string
		files map[string]string
		want  npu.ModelDetails
		// wantCount is the published parameter count: the estimate leaves
		// out biases, within 0.01% of it.
		wantCount int64
	}{
		{"optimum export", "Qwen2.5-1.5B-Instruct-int4-ov", map[string]string{
			"config.json": qwen15Config, "openvino_config.json": `{"dtype":"int4","quantization_config":{"bits":4}}`,
		}, npu.ModelDetails{Architecture: "qwen2", ParameterSize: "1.5B", Quantization: "INT4",
			EmbeddingLength: 1536, BlockCount: 28, HeadCount: 12, HeadCountKV: 2, VocabSize: 151936, TrainedContext: 32768}, 1_543_714_304},
		{"bits only", "m", map[string]string{"openvino_config.json": `{"quantization_config":{"bits":8}}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "INT8"}, 0},
		{"name only", "TinyLlama-1.1B-Chat-v1.0-fp16-ov", nil,
			npu.ModelDetails{ParameterSize: "1.1B", Quantization: "FP16"}, 0},
		{"small model in millions", "SmolLM2-135M-Instruct", nil,
			npu.ModelDetails{ParameterSize: "135M", Quantization: "unknown"}, 0},
		{"no files, no hints", "mymodel", nil, npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown"}, 0},
		{"kv heads default to heads", "m", map[string]string{"config.json": `{"model_type":"llama","num_attention_heads":8,"hidden_size":64}`},
			npu.ModelDetails{Architecture: "llama", EmbeddingLength: 64, HeadCount: 8, HeadCountKV: 8, ParameterSize: "unknown", Quantization: "unknown"}, 0},
		{"multimodal keeps the text model's shape", "m", map[string]string{"config.json": `{"model_type":"qwen2_vl","text_config":{"hidden_size":32,"num_hidden_layers":2,"num_attention_heads":4}}`},
			npu.ModelDetails{Architecture: "qwen2_vl", EmbeddingLength: 32, BlockCount: 2, HeadCount: 4, HeadCountKV: 4, ParameterSize: "unknown", Quantization: "unknown"}, 0},
		{"broken config.json is unknown, not an error", "m-int8", map[string]string{"config.json": `{"model_type":`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "INT8"}, 0},
		{"a template that takes enable_thinking reasons", "qwen3", map[string]string{"tokenizer_config.json": `{"chat_template": "{%- if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>' }}{%- endif %}"}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, Thinking: true}, 0},
		{"a template that opens <think> reasons", "r1", map[string]string{"chat_template.jinja": `{{ '<｜Assistant｜><think>\n' }}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, Thinking: true}, 0},
		{"qwen2.5 renders tools and answers <tool_call>", "qwen", map[string]string{"tokenizer_config.json": `{"chat_template": "{%- if tools %}{{- '<tools>' }}{%- for tool in tools %}{{ tool | tojson }}{%- endfor %}{{- '</tools> ... <tool_call>' }}{%- endif %}"}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, ToolFormat: chatfmt.Hermes{}.Name()}, 0},
		{"llama 3.1 renders tools for ipython", "llama", map[string]string{"chat_template.jinja": `{%- if tools is not none %}{{- '<|start_header_id|>ipython<|end_header_id|>' }}{%- endif %}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, ToolFormat: chatfmt.Llama3{}.Name()}, 0},
		{"mistral renders tools", "mistral", map[string]string{"chat_template.jinja": `{%- if tools is not none %}[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{%- endif %}[TOOL_CALLS]`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, ToolFormat: chatfmt.Mistral{}.Name()}, 0},
		{"phi-4-mini renders tools", "phi", map[string]string{"chat_template.jinja": `{% if message['tools'] is defined %}<|tool|>{{ message['tools'] }}<|/tool|>{% endif %}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, ToolFormat: chatfmt.Phi4Mini{}.Name()}, 0},
		{"tools without markers: the architecture decides", "q", map[string]string{"config.json": `{"model_type":"qwen3"}`, "chat_template.jinja": `{% if tools %}{{ tools }}{% endif %}`},
			npu.ModelDetails{Architecture: "qwen3", HeadCountKV: 0, ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders, ToolFormat: chatfmt.Hermes{}.Name()}, 0},
		{"a template without tools cannot call them", "plain", map[string]string{"config.json": `{"model_type":"qwen2"}`, "chat_template.jinja": `{% for m in messages %}{{ m.content }}{% endfor %}`},
			npu.ModelDetails{Architecture: "qwen2", ParameterSize: "unknown", Quantization: "unknown", PromptRenderer: GenAIRenders}, 0},
		{"a vision encoder makes a vision model", "vlm", map[string]string{"openvino_vision_embeddings_model.xml": `<net/>`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown", Vision: true}, 0},
		{"oversized config.json is not read", "m", map[string]string{"config.json": `{"model_type":"x","pad":"` + strings.Repeat("a", maxConfigBytes) + `"}`},
			npu.ModelDetails{ParameterSize: "unknown", Quantization: "unknown"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			got := Describe(dir, tc.model)
			if tc.wantCount > 0 {
				assert.InEpsilon(t, tc.wantCount, got.ParameterCount, 1e-4)
			}
			got.ParameterCount = 0
			assert.Equal(t, tc.want, got)
		})
	}
}
