package chatfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errNoMessages: every template reads the first message; minja fails
// on a conversation without one.
var errNoMessages = errors.New("chat template: a conversation without messages")

// jsonValue is a JSON value with its objects' keys in their order, as
// minja holds one (nlohmann's ordered_json): what the renderers walk when a
// template reads into a tool or prints it with an indent.
type jsonValue struct {
	kind   byte   // '{', '[', '"' (string), '0' (number), 'b' (bool), 'n' (null)
	text   string // a string's value; a number's or a bool's text
	keys   []string
	values []jsonValue // an object's values (beside keys) or an array's items
}

// parseJSON reads one JSON value, keeping its keys' order.
func parseJSON(raw []byte) (jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readJSONValue(dec)
	if err != nil {
		return jsonValue{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jsonValue{}, errors.New("json: more than one JSON value")
	}
	return v, nil
}

func readJSONValue(dec *json.Decoder) (jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return jsonValue{}, fmt.Errorf("json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		v := jsonValue{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return jsonValue{}, fmt.Errorf("json: %w", err)
				}
				name, ok := key.(string)
				if !ok {
					return jsonValue{}, errors.New("json: an object key that is not a string")
				}
				v.keys = append(v.keys, name)
			}
			item, err := readJSONValue(dec)
			if err != nil {
				return jsonValue{}, err
			}
			v.values = append(v.values, item)
		}
		if _, err := dec.Token(); err != nil {
			return jsonValue{}, fmt.Errorf("json: %w", err)
		}
		return v, nil
	case string:
		return jsonValue{kind: '"', text: t}, nil
	case json.Number:
		return jsonValue{kind: '0', text: jsonNumber(t)}, nil
	case bool:
		if t {
			return jsonValue{kind: 'b', text: "true"}, nil
		}
		return jsonValue{kind: 'b', text: "false"}, nil
	default:
		return jsonValue{kind: 'n', text: "null"}, nil
	}
}

// jsonString is a string as a jsonValue.
func jsonString(s string) jsonValue { return jsonValue{kind: '"', text: s} }

// jsonObject is an object of the keys and values given in turn.
func jsonObject(kv ...any) jsonValue {
	v := jsonValue{kind: '{'}
	for i := 0; i+1 < len(kv); i += 2 {
		v.keys = append(v.keys, kv[i].(string))
		v.values = append(v.values, kv[i+1].(jsonValue))
	}
	return v
}

// field is the value of an object's key, and whether it has it.
func (v jsonValue) field(key string) (jsonValue, bool) {
	if v.kind != '{' {
		return jsonValue{}, false
	}
	for i, k := range v.keys {
		if k == key {
			return v.values[i], true
		}
	}
	return jsonValue{}, false
}

// minjaDump writes v as minja's Value::dump(indent, to_json) does, what a
// template's tojson(indent=n) and minja's tool polyfill print: with an
// indent, every container opens and closes on a line of its own, even an
// empty one ("[\n    \n]"); without one (indent < 0), ", " and ": ".
func minjaDump(b *strings.Builder, v jsonValue, indent, level int) {
	newline := func(level int) {
		if indent > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", level*indent))
		}
	}
	switch v.kind {
	case '{', '[':
		b.WriteByte(v.kind)
		newline(level + 1)
		for i, item := range v.values {
			if i > 0 {
				b.WriteByte(',')
				if indent < 0 {
					b.WriteByte(' ')
				} else {
					newline(level + 1)
				}
			}
			if v.kind == '{' {
				writeJSONString(b, v.keys[i])
				b.WriteString(": ")
			}
			minjaDump(b, item, indent, level+1)
		}
		newline(level)
		if v.kind == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	case '"':
		writeJSONString(b, v.text)
	default:
		b.WriteString(v.text)
	}
}

// nlohmannDump writes v as nlohmann's dump(indent) does (indent >= 0),
// what minja's tool call and tool response polyfills print: an empty
// container stays "{}" or "[]".
func nlohmannDump(b *strings.Builder, v jsonValue, indent, level int) {
	switch v.kind {
	case '{', '[':
		closer := byte(']')
		if v.kind == '{' {
			closer = '}'
		}
		b.WriteByte(v.kind)
		if len(v.values) == 0 {
			b.WriteByte(closer)
			return
		}
		inner := strings.Repeat(" ", (level+1)*indent)
		for i, item := range v.values {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
			b.WriteString(inner)
			if v.kind == '{' {
				writeJSONString(b, v.keys[i])
				b.WriteString(": ")
			}
			nlohmannDump(b, item, indent, level+1)
		}
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", level*indent))
		b.WriteByte(closer)
	case '"':
		writeJSONString(b, v.text)
	default:
		b.WriteString(v.text)
	}
}

// callArguments are a call's arguments as minja hands them to a template
// that wants them as an object (its polyfill_object_arguments): the JSON
// value their text holds, or the text as a string when it holds none.
func callArguments(args string) jsonValue {
	if v, err := parseJSON([]byte(args)); err == nil {
		return v
	}
	return jsonString(args)
}

// minjaTrim is minja's trim filter: spaces, tabs and line breaks off both
// ends, nothing else.
func minjaTrim(s string) string { return strings.Trim(s, " \t\n\r") }

// minjaEqualMessages is minja's == between two messages as npud hands
// them to GenAI (content always, the other fields when set): objects are
// equal when every value of one is true to Jinja and equal to the
// other's, so a message with empty content equals none, itself included.
func minjaEqualMessages(a, b Message) bool {
	if a.Content == "" || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i, c := range a.ToolCalls {
		d := b.ToolCalls[i]
		if c.Name == "" || c.Name != d.Name || c.ID != d.ID || c.Arguments != d.Arguments {
			return false
		}
	}
	return a.Role == b.Role && a.Content == b.Content && a.Name == b.Name && a.ToolCallID == b.ToolCallID
}
