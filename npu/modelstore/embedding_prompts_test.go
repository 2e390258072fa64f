package modelstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadEmbeddingPrompts(t *testing.T) {
	for _, tc := range []struct {
		name, file string // file "": the folder has none
		want       map[string]string
		err        string
	}{
		{"no file", "", nil, ""},
		{"qwen3-embedding", `{"prompts": {"query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", "document": ""}, "default_prompt_name": null, "similarity_fn_name": "cosine"}`,
			map[string]string{"query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:", "document": ""}, ""},
		{"no prompts", `{"__version__": {"sentence_transformers": "2.2.2"}}`, nil, ""},
		{"empty prompts", `{"prompts": {}}`, nil, ""},
		{"not a string", `{"prompts": {"query": ["a"]}}`, nil, `prompt "query" is not a string`},
		{"not JSON", `{"prompts": `, nil, "config_sentence_transformers.json: unexpected EOF"},
		{"too long", `{"prompts": {"query": "` + strings.Repeat("a", maxEmbeddingPromptLength+1) + `"}}`, nil, "at most 4096 bytes"},
		{"too many", `{"prompts": {` + func() string {
			var b []string
			for i := range maxEmbeddingPrompts + 1 {
				b = append(b, `"k`+strings.Repeat("x", i)+`": ""`)
			}
			return strings.Join(b, ",")
		}() + `}}`, nil, "33 prompts, more than 32"},
		{"long name", `{"prompts": {"` + strings.Repeat("n", maxEmbeddingPromptName+1) + `": ""}}`, nil, "1 to 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, EmbeddingPromptsFile), []byte(tc.file), 0o644))
			}
			got, err := ReadEmbeddingPrompts(dir)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), dir, "the server's path stays out of what a client may read")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
