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
