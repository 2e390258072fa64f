package chatfmt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Conversation is what a chat template reads, as npud hands it to a
// renderer: the messages, the declared tools and the switches GenAI gives
// the template (src/cpp/src/tokenizer/tokenizer_impl.cpp,
// apply_chat_template: messages, tools, add_generation_prompt, then
// bos_token, eos_token and pad_token, then the extra context, such as
// enable_thinking).
type Conversation struct {
	Messages []Message
	// Tools are the declared tools, each the JSON object a template sees
	// (OpenAI's function tool: {"type": "function", "function": {...}}),
	// its keys in the order the client sent them.
	Tools []json.RawMessage
	// Think is enable_thinking; nil leaves it undefined (the template's
	// default).
	Think *bool
	// AddGenerationPrompt opens the assistant's turn; false continues the
	// last message (an assistant's prefill).
	AddGenerationPrompt bool
	Specials            Specials
	// Now is the time the template reads through minja's strftime_now
	// (Llama 3.2 writes the day's date), in the location the date is
	// written in (minja's is the worker's local time); zero is time.Now().
	Now time.Time
}

// Specials are the tokenizer's special tokens as text, as GenAI gives them
// to the template ("" when the model has none).
type Specials struct {
	BOS, EOS, PAD string
}

// Message is one message of a Conversation.
type Message struct {
	Role    string // system, user, assistant or tool
	Content string
	// ToolCalls are an assistant's calls; each Arguments is a JSON
	// object's text, its keys in the client's order.
	ToolCalls []Call
	// ToolCallID and Name: a tool result's call and tool.
	ToolCallID string
	Name       string
	// ReasoningContent is an assistant's reasoning apart from its content
	// (reasoning_content, which Qwen3's template reads); "" when there is
	// none, and then the key is absent.
	ReasoningContent string
}

// Renderer renders a conversation to exactly the text one published chat
// template renders through GenAI for it, or the template's refusal (its
// raise_exception) as an error.
type Renderer interface {
	Render(c Conversation) (string, error)
}

// Template is a published chat template npud renders itself.
type Template struct {
	// Name names the template, for /api/show and the logs ("qwen3").
	Name string
	// SHA256 are the hex SHA-256 of each template text this renderer
	// reproduces byte for byte: the reference tests check each one
	// (testdata/chattemplates).
	SHA256 []string
	Renderer
}

// TemplateError is a template's refusal of a conversation: what its
// raise_exception says (Mistral's alternating roles, Llama 3.1's single
// tool call).
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string {
	return "the model's chat template refuses this conversation: " + e.Message
}

// ErrUnknownTemplate: no renderer reproduces the model's template; GenAI
// renders it.
var ErrUnknownTemplate = errors.New("npud renders no such chat template")

// RendererFor is the renderer of the template text, found by its SHA-256
// among the families' templates; ErrUnknownTemplate when npud reproduces
// no such template.
func RendererFor(template string) (Template, error) {
	sum := sha256.Sum256([]byte(template))
	want := hex.EncodeToString(sum[:])
	for _, t := range Templates() {
		for _, s := range t.SHA256 {
			if s == want {
				return t, nil
			}
		}
	}
	return Template{}, ErrUnknownTemplate
}

// Templates are the templates every family renders.
func Templates() []Template {
	var all []Template
	for _, f := range Families() {
		if r, ok := f.(interface{ Templates() []Template }); ok {
			all = append(all, r.Templates()...)
		}
	}
	return all
}

// ToJSON writes JSON text the way a template's tojson filter does in
// GenAI's minja: ", " and ": " between items, keys in their order, strings
// escaped as nlohmann's dump escapes them (control characters, quote and
// backslash; non-ASCII as it is), numbers as nlohmann prints them.
func ToJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := writeJSONValue(&b, dec); err != nil {
		return "", err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New("tojson: more than one JSON value")
	}
	return b.String(), nil
}

func writeJSONValue(b *strings.Builder, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("tojson: %w", err)
	}
	switch v := tok.(type) {
	case json.Delim:
		closer, sep := "]", ", "
		if v == '{' {
			closer = "}"
		}
		b.WriteRune(rune(v))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(sep)
			}
			if v == '{' {
				key, err := dec.Token()
				if err != nil {
					return fmt.Errorf("tojson: %w", err)
				}
				name, ok := key.(string)
				if !ok {
					return errors.New("tojson: an object key that is not a string")
				}
				writeJSONString(b, name)
				b.WriteString(": ")
			}
			if err := writeJSONValue(b, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("tojson: %w", err)
		}
		b.WriteString(closer)
	case string:
		writeJSONString(b, v)
	case json.Number:
		b.WriteString(jsonNumber(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// jsonNumber is how nlohmann prints a number it parsed: an integer as it
// is, any other number as the shortest double that reads back, in decimal
// from 1e-4 up to below 1e15 (with ".0" when that looks like an integer:
// 1e6 is 1000000.0), in exponent form beyond (1e+15, 1e-05).
func jsonNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s
		}
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return s
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return "null"
	}
	out := strconv.FormatFloat(f, 'e', -1, 64)
	if exp, err := strconv.Atoi(out[strings.IndexByte(out, 'e')+1:]); err == nil && f != 0 && (exp < -4 || exp > 14) {
		return out
	}
	out = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(out, ".") {
		out += ".0"
	}
	return out
}

// writeJSONString escapes as nlohmann's dump does with ensure_ascii off.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
