package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// deepSeekR1TemplateSHA256 is the SHA-256 of deepseek-ai/DeepSeek-R1's
// published template (testdata/chattemplates), which its Qwen and Llama
// distills ship.
const deepSeekR1TemplateSHA256 = "563b1ce7d61d50a9b4c7439a912a1116f095b712df5b5e4d3e1116049874eb64"

// DeepSeek-R1's template never reads its tools variable, so GenAI's minja
// (its chat_template, polyfill_tools) tells the model of the tools in the
// system message: this text, the tools as indented JSON, and an example
// call it renders through the template once when it loads it (the same
// text whatever the model's special tokens are).
const (
	deepSeekToolsIntro   = "You can call any of the following tools to satisfy the user's requests: "
	deepSeekToolsExample = "\n\nExample tool call syntax:\n\n" + deepSeekCallsBegin + deepSeekCallBegin + "function" +
		deepSeekSep + "tool_name\n```json\n{\"arg1\": \"some_value\"}\n```" + deepSeekCallEnd + deepSeekCallsEnd +
		deepSeekEndOfSentence + "\n\n"
	deepSeekEndOfSentence = "<｜end▁of▁sentence｜>"
)

// deepSeekR1Renderer renders DeepSeek-R1's template, quirks included: the
// first call ever written opens the assistant's turn and later ones do
// not (its is_first is never reset), only the first tool result opens the
// outputs, and a call's arguments are concatenated to text, which minja
// prints as a Python dict.
type deepSeekR1Renderer struct{}

func (deepSeekR1Renderer) Render(c Conversation) (string, error) {
	msgs := c.Messages
	if len(c.Tools) > 0 {
		prompt, err := deepSeekToolsPrompt(c.Tools)
		if err != nil {
			return "", err
		}
		msgs = withSystemPrompt(msgs, prompt)
	}
	var b strings.Builder
	b.WriteString(c.Specials.BOS)
	firstSystem := true
	for _, m := range msgs {
		if m.Role == "system" {
			if !firstSystem {
				b.WriteString("\n\n")
			}
			b.WriteString(m.Content)
			firstSystem = false
		}
	}
	calledBefore, afterTool, firstOutput := false, false, true
	for _, m := range msgs {
		switch {
		case m.Role == "user":
			afterTool = false
			b.WriteString("<｜User｜>" + m.Content)
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			afterTool = false
			for _, call := range m.ToolCalls {
				args := deepSeekArguments(call.Arguments)
				text := deepSeekCallBegin + "function" + deepSeekSep + call.Name + "\n```json\n" + args + "\n```" + deepSeekCallEnd
				if calledBefore {
					b.WriteString("\n" + text)
					continue
				}
				b.WriteString("<｜Assistant｜>" + m.Content + deepSeekCallsBegin + text)
				calledBefore = true
			}
			b.WriteString(deepSeekCallsEnd + deepSeekEndOfSentence)
		case m.Role == "assistant" && afterTool:
			b.WriteString("<｜tool▁outputs▁end｜>" + m.Content + deepSeekEndOfSentence)
			afterTool = false
		case m.Role == "assistant":
			content := m.Content
			if i := strings.LastIndex(content, ThinkClose); i >= 0 {
				content = content[i+len(ThinkClose):]
			}
			b.WriteString("<｜Assistant｜>" + content + deepSeekEndOfSentence)
		case m.Role == "tool":
			afterTool = true
			if firstOutput {
				b.WriteString("<｜tool▁outputs▁begin｜>")
				firstOutput = false
			}
			b.WriteString("<｜tool▁output▁begin｜>" + m.Content + "<｜tool▁output▁end｜>")
		}
	}
	if afterTool {
		b.WriteString("<｜tool▁outputs▁end｜>")
	}
	if c.AddGenerationPrompt && !afterTool {
		b.WriteString("<｜Assistant｜>" + ThinkOpen + "\n")
	}
	if b.Len() == 0 {
		return "", errEmptyPrompt
	}
	return b.String(), nil
}

// deepSeekToolsPrompt is what minja adds to the system message about the
// tools.
func deepSeekToolsPrompt(tools []json.RawMessage) (string, error) {
	list := minjaValue{kind: minjaArray}
	for _, t := range tools {
		v, err := decodeMinjaValue([]byte(t))
		if err != nil {
			return "", fmt.Errorf("a declared tool: %w", err)
		}
		list.items = append(list.items, v)
	}
	var b strings.Builder
	b.WriteString(deepSeekToolsIntro)
	list.dump(&b, 2, 0, true)
	b.WriteString(deepSeekToolsExample)
	return b.String(), nil
}

// withSystemPrompt is minja's add_system: the prompt after the first
// message's content when it is a system message, else a system message of
// its own before the others.
func withSystemPrompt(msgs []Message, prompt string) []Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out := append([]Message(nil), msgs...)
		out[0] = Message{Role: "system", Content: msgs[0].Content + "\n\n" + prompt}
		return out
	}
	return append([]Message{{Role: "system", Content: prompt}}, msgs...)
}

// templateArguments are a call's arguments as npud hands them to a
// template: the JSON value their text holds, or the text as a string when
// it holds none.
func templateArguments(args string) minjaValue {
	if v, err := decodeMinjaValue([]byte(args)); err == nil {
		return v
	}
	return minjaValue{kind: minjaString, text: args}
}

// deepSeekArguments is a call's arguments as the template prints them,
// concatenated to text: minja's to_str of their value (an object as a
// Python dict).
func deepSeekArguments(args string) string {
	v := templateArguments(args)
	switch v.kind {
	case minjaString:
		return v.text
	case minjaNull:
		return "None"
	case minjaBool:
		if v.truth {
			return "True"
		}
		return "False"
	case minjaNumber:
		return minjaNumberText(v.text)
	}
	var b strings.Builder
	v.dump(&b, -1, 0, false)
	return b.String()
}

// minjaNumberText is a number as minja's to_str writes it: an integer in
// decimal (one beyond int64 wraps, as nlohmann's unsigned read as int64
// does), any other number as C's %f.
func minjaNumberText(text string) string {
	if !strings.ContainsAny(text, ".eE") {
		if _, err := strconv.ParseInt(text, 10, 64); err == nil {
			return text
		}
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return strconv.FormatInt(int64(u), 10)
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return text
	}
	return fmt.Sprintf("%f", f)
}

// minjaValue is a JSON value as GenAI's minja holds it, keys in their
// order, for printing it as minja does (Value::dump).
type minjaValue struct {
	kind  minjaKind
	text  string // a string's text, a number's JSON text
	truth bool
	keys  []string // an object's, in order
	items []minjaValue
}

type minjaKind int

const (
	minjaNull minjaKind = iota
	minjaString
	minjaNumber
	minjaBool
	minjaArray
	minjaObject
)

// minjaMaxDepth bounds the nesting a value may have, as encoding/json
// bounds what it reads: deeper is refused,
// not recursed into.
const minjaMaxDepth = 10000

func decodeMinjaValue(raw []byte) (minjaValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readMinjaValue(dec, 0)
	if err != nil {
		return minjaValue{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return minjaValue{}, errors.New("more than one JSON value")
	}
	return v, nil
}

func readMinjaValue(dec *json.Decoder, depth int) (minjaValue, error) {
	if depth > minjaMaxDepth {
		return minjaValue{}, fmt.Errorf("JSON nested deeper than %d", minjaMaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return minjaValue{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		v := minjaValue{kind: minjaArray}
		if t == '{' {
			v.kind = minjaObject
		}
		for dec.More() {
			if v.kind == minjaObject {
				key, err := dec.Token()
				if err != nil {
					return minjaValue{}, err
				}
				name, _ := key.(string) // the decoder gives object keys as strings
				v.keys = append(v.keys, name)
			}
			item, err := readMinjaValue(dec, depth+1)
			if err != nil {
				return minjaValue{}, err
			}
			v.items = append(v.items, item)
		}
		if _, err := dec.Token(); err != nil {
			return minjaValue{}, err
		}
		return v, nil
	case string:
		return minjaValue{kind: minjaString, text: t}, nil
	case json.Number:
		return minjaValue{kind: minjaNumber, text: jsonNumber(t)}, nil
	case bool:
		return minjaValue{kind: minjaBool, truth: t}, nil
	}
	return minjaValue{}, nil
}

// dump prints v as minja's Value::dump does: with indent > 0 every
// container opens a new line, empty ones too ("[\n  \n]"); without toJSON
// strings take single quotes (see minjaQuote) and booleans are True and
// False, as Python prints them.
func (v minjaValue) dump(b *strings.Builder, indent, level int, toJSON bool) {
	newline := func(level int) {
		if indent > 0 {
			b.WriteString("\n" + strings.Repeat(" ", level*indent))
		}
	}
	switch v.kind {
	case minjaNull:
		b.WriteString("null")
	case minjaNumber:
		b.WriteString(v.text)
	case minjaBool:
		switch {
		case toJSON:
			fmt.Fprint(b, v.truth)
		case v.truth:
			b.WriteString("True")
		default:
			b.WriteString("False")
		}
	case minjaString:
		minjaQuote(b, v.text, toJSON)
	case minjaArray, minjaObject:
		open, closer := "[", "]"
		if v.kind == minjaObject {
			open, closer = "{", "}"
		}
		b.WriteString(open)
		newline(level + 1)
		for i, item := range v.items {
			if i > 0 {
				b.WriteString(",")
				if indent < 0 {
					b.WriteString(" ")
				} else {
					newline(level + 1)
				}
			}
			if v.kind == minjaObject {
				minjaQuote(b, v.keys[i], toJSON)
				b.WriteString(": ")
			}
			item.dump(b, indent, level+1, toJSON)
		}
		newline(level)
		b.WriteString(closer)
	}
}

// minjaQuote prints a string as minja's dump_string does: as JSON with
// toJSON or when it holds a single quote; otherwise the JSON text's
// escapes between single quotes, each \" made " — scanned a byte at a
// time, so a string ending in a backslash ends in \" ('a\"' for a\).
func minjaQuote(b *strings.Builder, s string, toJSON bool) {
	var j strings.Builder
	writeJSONString(&j, s)
	quoted := j.String()
	if toJSON || strings.Contains(quoted, "'") {
		b.WriteString(quoted)
		return
	}
	b.WriteByte('\'')
	for i, n := 1, len(quoted)-1; i < n; i++ {
		if quoted[i] == '\\' && quoted[i+1] == '"' {
			b.WriteByte('"')
			i++
		} else {
			b.WriteByte(quoted[i])
		}
	}
	b.WriteByte('\'')
}
