package modelstore

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EmbeddingOutput is the output of an embedding model's IR that npud
// pools: the encoder's hidden states, the name optimum-intel gives them in
// a feature-extraction export and the one GenAI's TextEmbeddingPipeline
// reads (openvino.genai src/cpp/src/rag/text_embedding_pipeline.cpp:
// get_tensor("last_hidden_state")).
const EmbeddingOutput = "last_hidden_state"

// maxIRBytes bounds the IR file read to tell an embedding model apart: an
// IR's XML is the graph alone (the weights are in the .bin); the largest
// exports npud serves have a few MB of it.
const maxIRBytes = 64 << 20

// EmbeddingIR is what an embedding model's openvino_model.xml declares.
type EmbeddingIR struct {
	// Inputs are the IR's input names: input_ids and attention_mask, and
	// token_type_ids where the model has it (BERT).
	Inputs []string
}

// HasInput reports whether the IR takes the input named name.
func (ir EmbeddingIR) HasInput(name string) bool { return slices.Contains(ir.Inputs, name) }

// ErrNotEmbedding is wrapped when a folder's IR is not an embedding model's.
var ErrNotEmbedding = errors.New("not an embedding model")

// IsEmbeddingModel reports whether the model folder dir holds an embedding
// model (ReadEmbeddingIR).
func IsEmbeddingModel(dir string) bool {
	_, err := ReadEmbeddingIR(dir)
	return err == nil
}

// ReadEmbeddingIR reads the model folder dir's openvino_model.xml and
// tells whether it is an embedding model: inputs input_ids and
// attention_mask, none of the inputs a language model's export has
// (position_ids, beam_idx: optimum-intel's stateful decoders), and an
// output named last_hidden_state (EmbeddingOutput). A speech or vision
// folder is never one.
func ReadEmbeddingIR(dir string) (EmbeddingIR, error) {
	return readEncoderIR(dir, EmbeddingOutput, ErrNotEmbedding)
}

// readEncoderIR reads the model folder dir's openvino_model.xml and tells
// whether it is an encoder giving output: inputs input_ids and
// attention_mask, none of a language model's export's, and an output (or
// any port) named output; else an error wrapping notKind. The XML is read
// a token at a time, and a language model's is left at its inputs (the IR
// lists its Parameters first).
func readEncoderIR(dir, output string, notKind error) (EmbeddingIR, error) {
	if IsSpeechModel(dir) || HasVisionEncoder(dir) {
		return EmbeddingIR{}, notKind
	}
	path := filepath.Join(dir, "openvino_model.xml")
	f, err := os.Open(path)
	if err != nil {
		return EmbeddingIR{}, err
	}
	defer func() { _ = f.Close() }() // read only
	dec := xml.NewDecoder(bufio.NewReader(io.LimitReader(f, maxIRBytes)))
	var ir EmbeddingIR
	found := false
	inParameter := false
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return EmbeddingIR{}, fmt.Errorf("%s: %w", path, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch el.Name.Local {
		case "layer":
			inParameter = attr(el, "type") == "Parameter"
		case "port":
			names := strings.Split(attr(el, "names"), ",")
			if inParameter {
				ir.Inputs = append(ir.Inputs, names...)
				if slices.Contains(names, "position_ids") || slices.Contains(names, "beam_idx") {
					return EmbeddingIR{}, fmt.Errorf("%s: a language model's input (%s): %w", path, strings.Join(names, ","), notKind)
				}
			}
			found = found || slices.Contains(names, output)
		}
	}
	if !ir.HasInput("input_ids") || !ir.HasInput("attention_mask") || !found {
		return EmbeddingIR{}, fmt.Errorf("%s: no input_ids, attention_mask and %s: %w", path, output, notKind)
	}
	return ir, nil
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Pooling is how an embedding model's token vectors become one vector.
type Pooling string

// The pooling kinds of GenAI's TextEmbeddingPipeline::PoolingType
// (src/cpp/include/openvino/genai/rag/text_embedding_pipeline.hpp).
const (
	PoolCLS       Pooling = "cls"        // the first token's vector
	PoolMean      Pooling = "mean"       // the mean over the attention mask
	PoolLastToken Pooling = "last_token" // the last unmasked token's vector
)

// EmbeddingConfig is how an embedding model's vectors are made from its
// hidden states.
type EmbeddingConfig struct {
	Pooling   Pooling
	Normalize bool // L2
	// MaxLength is the most tokens one text is given to the model (its
	// max_position_embeddings, or sentence-transformers' max_seq_length
	// when smaller); 0: unknown, no limit but the request's.
	MaxLength int
}

// sentence-transformers' module types that decide pooling and
// normalisation (modules.json).
const (
	stPooling   = "sentence_transformers.models.Pooling"
	stNormalize = "sentence_transformers.models.Normalize"
)

// ReadEmbeddingConfig reads the embedding model folder dir's configuration
// as sentence-transformers writes it: modules.json lists the modules (a
// Normalize module: L2 normalisation; a Pooling module: the folder of its
// config.json, 1_Pooling), and the pooling's config.json names one mode.
// Without those files it is GenAI's TextEmbeddingPipeline::Config default
// (text_embedding_pipeline.hpp: pooling_type CLS, normalize true). A mode
// npud does not implement (max, mean_sqrt_len, weightedmean), or more
// than one, is an error: the vectors would differ from the model's.
func ReadEmbeddingConfig(dir string) (EmbeddingConfig, error) {
	cfg := EmbeddingConfig{Pooling: PoolCLS, Normalize: true}
	var modules []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	poolingDir := "1_Pooling"
	switch err := readJSON(filepath.Join(dir, "modules.json"), &modules); {
	case err == nil:
		cfg.Normalize = false
		for _, m := range modules {
			switch m.Type {
			case stNormalize:
				cfg.Normalize = true
			case stPooling:
				if !filepath.IsLocal(m.Path) {
					return cfg, fmt.Errorf("%s: modules.json names the pooling folder %q, outside the model's folder", dir, m.Path)
				}
				poolingDir = m.Path
			}
		}
	case !errors.Is(err, os.ErrNotExist):
		return cfg, fmt.Errorf("%s: modules.json: %w", dir, err)
	}
	var modes map[string]any
	switch err := readJSON(filepath.Join(dir, poolingDir, "config.json"), &modes); {
	case err == nil:
		var chosen []string
		for k, v := range modes {
			if on, _ := v.(bool); on && strings.HasPrefix(k, "pooling_mode_") {
				chosen = append(chosen, k)
			}
		}
		slices.Sort(chosen)
		if len(chosen) != 1 {
			return cfg, fmt.Errorf("%s: %s/config.json turns on %d pooling modes (%s); npud pools with exactly one", dir, poolingDir, len(chosen), strings.Join(chosen, ", "))
		}
		switch chosen[0] {
		case "pooling_mode_cls_token":
			cfg.Pooling = PoolCLS
		case "pooling_mode_mean_tokens":
			cfg.Pooling = PoolMean
		case "pooling_mode_lasttoken":
			cfg.Pooling = PoolLastToken
		default:
			return cfg, fmt.Errorf("%s: %s/config.json pools with %s, which npud does not implement (cls_token, mean_tokens and lasttoken, as GenAI's TextEmbeddingPipeline)", dir, poolingDir, chosen[0])
		}
	case !errors.Is(err, os.ErrNotExist):
		return cfg, fmt.Errorf("%s: %s/config.json: %w", dir, poolingDir, err)
	}
	var hf hfConfig
	if readJSON(filepath.Join(dir, "config.json"), &hf) == nil && hf.MaxPositionEmbeddings > 0 {
		cfg.MaxLength = hf.MaxPositionEmbeddings
	}
	var st struct {
		MaxSeqLength int `json:"max_seq_length"`
	}
	if readJSON(filepath.Join(dir, "sentence_bert_config.json"), &st) == nil && st.MaxSeqLength > 0 &&
		(cfg.MaxLength == 0 || st.MaxSeqLength < cfg.MaxLength) {
		cfg.MaxLength = st.MaxSeqLength
	}
	return cfg, nil
}
