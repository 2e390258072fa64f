package modelstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHasChatTemplate(t *testing.T) {
	for _, tc := range []struct {
		file, content string
		want          bool
	}{
		{"tokenizer_config.json", `{"chat_template": "{{ x }}"}`, true},
		{"tokenizer_config.json", `{"chat_template": ""}`, false},
		{"tokenizer_config.json", `{"chat_template": [{"name": "default", "template": "{{ x }}"}]}`, true},
		{"tokenizer_config.json", `{"bos_token": "<s>"}`, false},
		{"chat_template.json", `{"chat_template": "{{ x }}"}`, true},
		{"chat_template.jinja", `{{ x }}`, true},
		{"chat_template.jinja", ``, false},
		{"openvino_tokenizer.xml", "<net>\n<rt_info>\n\t<chat_template value=\"{{ x }}\" />\n</rt_info>\n</net>\n", true},
		{"openvino_tokenizer.xml", "<net>\n<rt_info>\n\t<chat_template value=\"\" />\n</rt_info>\n</net>\n", false},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
		assert.Equal(t, tc.want, HasChatTemplate(dir), "%s: %s", tc.file, tc.content)
	}
	assert.False(t, HasChatTemplate(t.TempDir()))
}

// Issue 39 item 4: npud reads the template GenAI renders: the files in
// GenAI's order, the later replacing the earlier, and the tokenizer IR's
// rt_info over all of them.
func TestChatTemplateIsTheOneGenAIRenders(t *testing.T) {
	ir := func(tpl string) string {
		return "<net>\n<rt_info>\n\t\t<chat_template value=\"" + tpl + "\" />\n</rt_info>\n</net>\n"
	}
	for _, tc := range []struct {
		name         string
		files        map[string]string
		text, source string
	}{
		{"none", map[string]string{"config.json": `{}`}, "", ""},
		{"tokenizer_config.json", map[string]string{"tokenizer_config.json": `{"chat_template": "A"}`}, "A", "tokenizer_config.json"},
		{"the default of a named list", map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`}, "D", "tokenizer_config.json"},
		{"chat_template.json over tokenizer_config.json", map[string]string{"tokenizer_config.json": `{"chat_template": "A"}`, "chat_template.json": `{"chat_template": "B"}`}, "B", "chat_template.json"},
		{"chat_template.jinja over the JSON files", map[string]string{"tokenizer_config.json": `{"chat_template": "A"}`, "processor_config.json": `{"chat_template": "P"}`, "chat_template.jinja": "J\n"}, "J\n", "chat_template.jinja"},
		{"the IR's rt_info over every file", map[string]string{"chat_template.jinja": "J", "openvino_tokenizer.xml": ir("{{ m &amp; &lt;x&gt; &quot;q&quot; }}&#10;")}, "{{ m & <x> \"q\" }}\n", "openvino_tokenizer.xml rt_info"},
		{"an IR without one leaves the files'", map[string]string{"chat_template.jinja": "J", "openvino_tokenizer.xml": "<net>\n<rt_info>\n<eos_token_id value=\"2\" />\n</rt_info>\n</net>\n"}, "J", "chat_template.jinja"},
		{"unreadable JSON is no template", map[string]string{"tokenizer_config.json": `{"chat_template": `}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
			}
			text, source := ChatTemplate(dir)
			assert.Equal(t, tc.text, text)
			assert.Equal(t, tc.source, source)
		})
	}
}

func TestReadSpecialTokens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  SpecialTokens
	}{
		{"strings", map[string]string{"tokenizer_config.json": `{"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}`}, SpecialTokens{"<s>", "</s>", "<pad>"}},
		{"objects' content", map[string]string{"tokenizer_config.json": `{"bos_token": {"content": "<|begin_of_text|>"}, "eos_token": {"content": "<|eot_id|>"}}`}, SpecialTokens{"<|begin_of_text|>", "<|eot_id|>", "<|eot_id|>"}},
		{"special_tokens_map.json fills the gaps", map[string]string{"tokenizer_config.json": `{"eos_token": "<|im_end|>", "bos_token": null}`, "special_tokens_map.json": `{"bos_token": {"content": "<bos>"}, "eos_token": {"content": "ignored"}}`}, SpecialTokens{"<bos>", "<|im_end|>", "<|im_end|>"}},
		{"none", nil, SpecialTokens{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
			}
			assert.Equal(t, tc.want, ReadSpecialTokens(dir))
		})
	}
}
