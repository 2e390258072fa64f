package modelstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// HasChatTemplate reports whether GenAI will find a chat template for the
// model in dir (the engine and npud doctor ask the same question). GenAI's tokenizer takes it from the openvino_tokenizer.xml
// rt_info, tokenizer_config.json, processor_config.json, chat_template.json
// or chat_template.jinja. The binding must know beforehand: a
// generate_with_history on a model without one fails with no reason, after
// latching the pipeline into chat mode (GenAI sets the chat flag before its
// check), so that every later plain generate would fail too.
func HasChatTemplate(dir string) bool {
	for _, name := range []string{"tokenizer_config.json", "processor_config.json", "chat_template.json"} {
		if jsonChatTemplate(filepath.Join(dir, name)) {
			return true
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "chat_template.jinja")); err == nil && st.Size() > 0 {
		return true
	}
	return xmlChatTemplate(filepath.Join(dir, "openvino_tokenizer.xml"))
}

// maxTemplateBytes bounds what is read of a model's files for its chat
// template and context.
const maxTemplateBytes = 16 << 20

func jsonChatTemplate(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if json.NewDecoder(bufioLimit(f)).Decode(&cfg) != nil {
		return false
	}
	return templateText(cfg.ChatTemplate) != ""
}

// templateText is a chat_template field's text: a string, or the named
// templates some exports list ([{"name": …, "template": …}]) one after
// another; "" when there is none.
func templateText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var named []struct {
		Template string `json:"template"`
	}
	if json.Unmarshal(raw, &named) != nil {
		return ""
	}
	var b strings.Builder
	for _, n := range named {
		b.WriteString(n.Template)
	}
	return b.String()
}

func bufioLimit(f *os.File) *bufio.Reader {
	return bufio.NewReader(&limited{f: f, n: maxTemplateBytes})
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, os.ErrDeadlineExceeded // past the bound: treated as no template
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// xmlChatTemplate looks for a non-empty <chat_template value="..."/> in the
// tokenizer IR's rt_info, line by line (the IR holds no weights).
func xmlChatTemplate(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTemplateBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if rest, ok := bytes.CutPrefix(line, []byte(`<chat_template value="`)); ok {
			return len(rest) > 0 && rest[0] != '"'
		}
	}
	return false
}

// ModelContext is the context length the model was trained for, from its
// config.json (Hugging Face's names for it), or 0 when none is given.
func ModelContext(dir string) int {
	f, err := os.Open(filepath.Join(dir, "config.json"))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read only
	var cfg map[string]json.RawMessage
	if json.NewDecoder(bufioLimit(f)).Decode(&cfg) != nil {
		return 0
	}
	for _, key := range []string{"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"} {
		var n int
		if json.Unmarshal(cfg[key], &n) == nil && n > 0 {
			return n
		}
	}
	return 0
}
