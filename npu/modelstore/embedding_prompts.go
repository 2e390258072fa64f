package modelstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// EmbeddingPromptsFile is where sentence-transformers keeps an embedding
// model's prompts: the instruction put before a text of each kind
// (Qwen3-Embedding's "Instruct: …\nQuery:" for queries; e5's "query: " and
// "passage: "). optimum-intel copies it into an OpenVINO export's folder.
const EmbeddingPromptsFile = "config_sentence_transformers.json"

// The bounds on a folder's prompts: a few kinds of a few sentences each.
const (
	maxEmbeddingPrompts      = 32
	maxEmbeddingPromptName   = 64
	maxEmbeddingPromptLength = 4096
)

// ReadEmbeddingPrompts reads the prompts of the embedding model in dir,
// by kind ("query", "document"): nil when its folder has none. GenAI's
// TextEmbeddingPipeline takes the same instructions as configuration
// (query_instruction, embed_instruction) and puts one right before the
// text (openvino.genai src/cpp/src/rag/text_embedding_pipeline.cpp:
// format_query, format_texts); npud reads them from the folder instead.
func ReadEmbeddingPrompts(dir string) (map[string]string, error) {
	var cfg struct {
		Prompts map[string]json.RawMessage `json:"prompts"`
	}
	err := readJSON(filepath.Join(dir, EmbeddingPromptsFile), &cfg)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		// The decoder's words only: the others name the server's path.
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: %w", EmbeddingPromptsFile, err)
		}
		return nil, fmt.Errorf("%s cannot be read (too large, or not a file)", EmbeddingPromptsFile)
	case len(cfg.Prompts) == 0:
		return nil, nil
	case len(cfg.Prompts) > maxEmbeddingPrompts:
		return nil, fmt.Errorf("%s: %d prompts, more than %d", EmbeddingPromptsFile, len(cfg.Prompts), maxEmbeddingPrompts)
	}
	prompts := make(map[string]string, len(cfg.Prompts))
	for name, raw := range cfg.Prompts {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, fmt.Errorf("%s: prompt %q is not a string", EmbeddingPromptsFile, name)
		}
		if name == "" || len(name) > maxEmbeddingPromptName || !utf8.ValidString(name) {
			return nil, fmt.Errorf("%s: a prompt's name must be 1 to %d bytes of UTF-8", EmbeddingPromptsFile, maxEmbeddingPromptName)
		}
		if len(text) > maxEmbeddingPromptLength || !utf8.ValidString(text) {
			return nil, fmt.Errorf("%s: prompt %q must be at most %d bytes of UTF-8", EmbeddingPromptsFile, name, maxEmbeddingPromptLength)
		}
		prompts[name] = text
	}
	return prompts, nil
}
