package modelstore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/chatfmt"
)

// maxConfigBytes bounds the JSON files read to describe a model: a
// config.json is a few kilobytes.
const maxConfigBytes = 1 << 20

// hfConfig is the part of a Hugging Face config.json that describes the
// network's shape.
type hfConfig struct {
	ModelType             string `json:"model_type"`
	HiddenSize            int    `json:"hidden_size"`
	NumHiddenLayers       int    `json:"num_hidden_layers"`
	NumAttentionHeads     int    `json:"num_attention_heads"`
	NumKeyValueHeads      int    `json:"num_key_value_heads"`
	HeadDim               int    `json:"head_dim"`
	IntermediateSize      int    `json:"intermediate_size"`
	VocabSize             int    `json:"vocab_size"`
	MaxPositionEmbeddings int    `json:"max_position_embeddings"`
	TieWordEmbeddings     bool   `json:"tie_word_embeddings"`
	// Multimodal configurations keep the language model's shape here.
	TextConfig *hfConfig `json:"text_config"`
}

// ovConfig is optimum-intel's openvino_config.json: how the weights were
// compressed.
type ovConfig struct {
	DType              string `json:"dtype"`
	QuantizationConfig *struct {
		Bits int `json:"bits"`
	} `json:"quantization_config"`
}

// Describe reads what the model folder dir says about the model named
// name. Missing or unreadable files leave their fields unknown.
func Describe(dir, name string) npu.ModelDetails {
	var d npu.ModelDetails
	var cfg hfConfig
	if readJSON(filepath.Join(dir, "config.json"), &cfg) == nil {
		if cfg.TextConfig != nil && cfg.HiddenSize == 0 {
			arch := cfg.ModelType
			cfg = *cfg.TextConfig
			if arch != "" {
				cfg.ModelType = arch
			}
		}
		d.Architecture = cfg.ModelType
		d.EmbeddingLength, d.BlockCount, d.HeadCount = cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads
		d.HeadCountKV, d.VocabSize, d.TrainedContext = cfg.NumKeyValueHeads, cfg.VocabSize, cfg.MaxPositionEmbeddings
		if d.HeadCountKV == 0 {
			d.HeadCountKV = d.HeadCount
		}
		d.ParameterCount = cfg.parameters()
	}
	d.ParameterSize = parameterSize(d.ParameterCount, name)
	var ov ovConfig
	if readJSON(filepath.Join(dir, "openvino_config.json"), &ov) == nil {
		switch {
		case ov.DType != "" && ov.DType != "auto":
			d.Quantization = strings.ToUpper(ov.DType)
		case ov.QuantizationConfig != nil && ov.QuantizationConfig.Bits > 0:
			d.Quantization = fmt.Sprintf("INT%d", ov.QuantizationConfig.Bits)
		}
	}
	if d.Quantization == "" {
		d.Quantization = quantizationFromName(name)
	}
	d.Properties, d.PropertiesRefused = folderProperties(dir)
	if IsSpeechModel(dir) {
		// Whisper transcribes: no chat template, tools or thinking, whatever
		// its tokenizer_config.json holds.
		d.Speech, d.SpeechOnly = true, true
		return d
	}
	if IsEmbeddingModel(dir) {
		// An encoder: no chat template, tools or thinking.
		d.EmbeddingOnly = true
		prompts, err := ReadEmbeddingPrompts(dir)
		if err != nil {
			d.EmbeddingPromptsRefused = err.Error()
		}
		d.EmbeddingPrompts = prompts
		return d
	}
	if IsRerankModel(dir) {
		// A cross-encoder: no chat template, tools or thinking.
		d.RerankOnly = true
		return d
	}
	template := chatTemplateText(dir)
	d.Thinking = strings.Contains(template, "enable_thinking") || strings.Contains(template, "<think>")
	if f := chatfmt.Recognise(template, cfg.ModelType); f != nil {
		d.ToolFormat = f.Name()
	}
	d.Vision = HasVisionEncoder(dir)
	if own, _ := ChatTemplate(dir); own != "" {
		d.PromptRenderer = GenAIRenders // a vision model's images go with GenAI's own history
		if t, err := chatfmt.RendererFor(own); err == nil && !d.Vision {
			d.PromptRenderer = t.Name
		}
	}
	return d
}

// GenAIRenders is ModelDetails.PromptRenderer for a model whose chat
// template npud does not reproduce: GenAI renders its prompts.
const GenAIRenders = npu.GenAIRenders

// HasVisionEncoder reports whether the model folder dir holds a
// vision-language model: optimum-intel exports one with its image encoder
// beside the language model, and GenAI's VLM pipeline loads it.
func HasVisionEncoder(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "openvino_vision_embeddings_model.xml"))
	return err == nil
}

// chatTemplateText is the model's chat template text: tokenizer_config.json's
// and chat_template.jinja's, for looking into (not rendering).
func chatTemplateText(dir string) string {
	var tc struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	template := ""
	if readJSON(filepath.Join(dir, "tokenizer_config.json"), &tc) == nil {
		template = templateText(tc.ChatTemplate) // decoded: escapes would hide the markers
	}
	if f, err := os.Open(filepath.Join(dir, "chat_template.jinja")); err == nil {
		b := make([]byte, maxConfigBytes)
		n, _ := f.Read(b)
		_ = f.Close()
		template += string(b[:n])
	}
	return template
}

func readJSON(path string, into any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose on close
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > maxConfigBytes {
		return fmt.Errorf("%s is larger than %d bytes", path, maxConfigBytes)
	}
	return json.NewDecoder(f).Decode(into)
}

// parameters estimates a decoder-only transformer's weights from its
// shapes: embeddings (twice when the output head is not tied), and per
// layer the attention projections (grouped key/value heads), a gated MLP
// and two norms. Biases are left out: they are a fraction of a percent.
func (c hfConfig) parameters() int64 {
	h, layers, heads := int64(c.HiddenSize), int64(c.NumHiddenLayers), int64(c.NumAttentionHeads)
	if h == 0 || layers == 0 || heads == 0 || c.VocabSize == 0 || c.IntermediateSize == 0 {
		return 0
	}
	headDim := int64(c.HeadDim)
	if headDim == 0 {
		headDim = h / heads
	}
	kv := int64(c.NumKeyValueHeads)
	if kv == 0 {
		kv = heads
	}
	attention := 2*h*heads*headDim + 2*h*kv*headDim
	mlp := 3 * h * int64(c.IntermediateSize)
	embeddings := int64(c.VocabSize) * h
	if !c.TieWordEmbeddings {
		embeddings *= 2
	}
	return embeddings + layers*(attention+mlp+2*h) + h
}

// sizeInName finds a size such as "1.5B" or "135M" in a model's name.
var sizeInName = regexp.MustCompile(`(?i)(?:^|[-_.])(\d+(?:\.\d+)?)([bm])(?:$|[-_.])`)

// parameterSize is the size people read, "1.5B" or "494M": from the
// estimate, else from the name, else "unknown".
func parameterSize(count int64, name string) string {
	switch {
	case count >= 1e9:
		return strconv.FormatFloat(float64(count)/1e9, 'f', 1, 64) + "B"
	case count >= 1e6:
		return strconv.FormatFloat(float64(count)/1e6, 'f', 0, 64) + "M"
	}
	if m := sizeInName.FindStringSubmatch(name); m != nil {
		return m[1] + strings.ToUpper(m[2])
	}
	return "unknown"
}

// quantizationFromName reads the weight format OpenVINO repositories put
// in their names (…-int4-ov, …-fp16-ov).
func quantizationFromName(name string) string {
	lower := strings.ToLower(name)
	for _, q := range []string{"int4", "int8", "fp16", "fp32", "bf16", "nf4"} {
		if strings.Contains(lower, q) {
			return strings.ToUpper(q)
		}
	}
	return "unknown"
}

// folderProperties are the properties dir's PropertiesFile sets, or why it
// is refused (without the server's path: clients read it).
func folderProperties(dir string) (map[string]string, string) {
	props, err := ReadProperties(dir)
	if err != nil {
		return nil, strings.TrimPrefix(err.Error(), filepath.Join(dir, PropertiesFile)+": ")
	}
	if len(props) == 0 {
		return nil, ""
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.Key] = p.Value
	}
	return out, ""
}
