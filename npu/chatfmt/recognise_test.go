package chatfmt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A model's family comes from the call syntax its chat template teaches,
// then from its architecture; a template that renders no tools has none.
func TestRecognise(t *testing.T) {
	for _, tc := range []struct {
		name, template, modelType, want string
	}{
		{"qwen template", `{% if tools %}<tool_call>{{ tool }}</tool_call>{% endif %}`, "", "hermes"},
		{"mistral template", `{% if tools %}[AVAILABLE_TOOLS]{% endif %}[TOOL_CALLS]`, "", "mistral"},
		{"llama template", `{% if tools %}<|python_tag|>{% endif %}`, "", "llama3"},
		{"llama ipython role", `{% if tools %}{% if message.role == "ipython" %}{% endif %}{% endif %}`, "", "llama3"},
		{"phi-4-mini template", `{% if 'tools' in message %}<|tool|>{{ message['tools'] }}<|/tool|>{% endif %}`, "", "phi4mini"},
		{"gemma template", `{% if tools %}{% endif %}<start_of_turn>user`, "", "gemma3"},
		{"gemma template without tools", `<start_of_turn>user`, "gemma3_text", ""},
		{"template before architecture", `{% if tools %}<tool_call>{% endif %}`, "llama", "hermes"},
		{"qwen architecture", `{% if tools %}{{ tools }}{% endif %}`, "qwen3", "hermes"},
		{"llama architecture", `{% if tools %}{% endif %}`, "llama", "llama3"},
		{"mistral architecture", `{% if tools %}{% endif %}`, "mistral", "mistral"},
		{"phi architecture", `{% if tools %}{% endif %}`, "phi3", "phi4mini"},
		{"deepseek-r1 template", `{% if 'tool_calls' in message %}<｜Assistant｜><｜tool▁calls▁begin｜>{% endif %}`, "qwen2", "deepseek-r1"},
		{"deepseek-r1 assistant token", `{% if message['tool_calls'] %}{% endif %}<｜Assistant｜>`, "llama", "deepseek-r1"},
		{"deepseek architecture says nothing", `{% if tools %}{% endif %}`, "deepseek_v3", ""},
		{"no tools in the template", `<tool_call>`, "qwen2", ""},
		{"unknown architecture", `{% if tools %}{% endif %}`, "gemma3", ""},
		{"no template", "", "", ""},
	} {
		got := ""
		if f := Recognise(tc.template, tc.modelType); f != nil {
			got = f.Name()
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
	for file, want := range map[string]string{
		"deepseek-ai--DeepSeek-R1.jinja":  "deepseek-r1",
		"Qwen--Qwen2.5-3B-Instruct.jinja": "hermes",
		"Qwen--Qwen3-1.7B.jinja":          "hermes",
	} {
		text, err := os.ReadFile(filepath.Join(templatesDir, file))
		require.NoError(t, err)
		f := Recognise(string(text), "qwen2")
		require.NotNil(t, f, file)
		assert.Equal(t, want, f.Name(), file)
	}
}

// Every family is found by its name, and no two share one.
func TestLookupFindsEveryFamily(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Families() {
		assert.False(t, seen[f.Name()], "two families named %q", f.Name())
		seen[f.Name()] = true
		assert.Equal(t, f, Lookup(f.Name()))
	}
	assert.Nil(t, Lookup(""))
	assert.Nil(t, Lookup("harmony"))
}
