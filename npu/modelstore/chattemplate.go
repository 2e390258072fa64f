package modelstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
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

// ChatTemplate is the chat template GenAI's tokenizer renders for the
// model in dir, and where it was found: the files in GenAI's order, each
// one found replacing the one before (tokenizer_config.json,
// processor_config.json, chat_template.json, chat_template.jinja), then
// the tokenizer IR's rt_info, which wins when present
// (src/cpp/src/tokenizer/tokenizer_impl.cpp: setup_tokenizer,
// parse_chat_template_from_file, parse_chat_template_from_tokenizer).
// "" when the model has none.
func ChatTemplate(dir string) (text, source string) {
	for _, name := range []string{"tokenizer_config.json", "processor_config.json", "chat_template.json"} {
		if t := jsonTemplate(filepath.Join(dir, name)); t != "" {
			text, source = t, name
		}
	}
	if b, err := readBounded(filepath.Join(dir, "chat_template.jinja")); err == nil {
		text, source = string(b), "chat_template.jinja"
	}
	if t, ok := RTInfoChatTemplate(filepath.Join(dir, TokenizerIR)); ok {
		text, source = t, TokenizerIR+" rt_info"
	}
	return text, source
}

// TokenizerIR is the tokenizer's OpenVINO IR in a model folder.
const TokenizerIR = "openvino_tokenizer.xml"

// jsonTemplate is a JSON file's chat_template as GenAI reads it: a string,
// or from a list of named templates the one named "default".
func jsonTemplate(path string) string {
	b, err := readBounded(path)
	if err != nil {
		return ""
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(cfg.ChatTemplate, &s) == nil {
		return s
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	_ = json.Unmarshal(cfg.ChatTemplate, &named) // not a list: no template
	for _, n := range named {
		if n.Name == "default" {
			return n.Template
		}
	}
	return ""
}

// RTInfoChatTemplate is the chat_template an IR file's rt_info holds as a
// value attribute, XML-unescaped; ok is false when it holds none.
func RTInfoChatTemplate(path string) (text string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTemplateBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if !bytes.HasPrefix(line, []byte(`<chat_template value="`)) {
			continue
		}
		var el struct {
			Value string `xml:"value,attr"`
		}
		if xml.Unmarshal(line, &el) != nil {
			return "", false
		}
		return el.Value, true
	}
	return "", false
}

// readBounded reads a model file of at most maxTemplateBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTemplateBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxTemplateBytes)
	}
	return b, nil
}

// SpecialTokens are the model's bos, eos and pad tokens as text, as GenAI's
// tokenizer gives them to the chat template: tokenizer_config.json's (a
// string or an object's content), then special_tokens_map.json's, the pad
// token falling back to the eos token
// (tokenizer_impl.cpp: read_tokenizer_config_if_necessary,
// read_special_tokens_map). GenAI also decodes a token it knows only by
// id; npud does not: that token's text is "".
type SpecialTokens struct {
	BOS, EOS, PAD string
}

// ReadSpecialTokens reads the model's special tokens' text.
func ReadSpecialTokens(dir string) SpecialTokens {
	var s SpecialTokens
	for _, name := range []string{"tokenizer_config.json", "special_tokens_map.json"} {
		b, err := readBounded(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var cfg map[string]json.RawMessage
		if json.Unmarshal(b, &cfg) != nil {
			continue
		}
		for key, into := range map[string]*string{"bos_token": &s.BOS, "eos_token": &s.EOS, "pad_token": &s.PAD} {
			if *into == "" {
				*into = tokenText(cfg[key])
			}
		}
	}
	if s.PAD == "" {
		s.PAD = s.EOS
	}
	return s
}

// tokenText is a special token's text: a string or {"content": …}.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(raw, &obj) // neither: no token
	return obj.Content
}
