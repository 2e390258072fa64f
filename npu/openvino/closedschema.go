//go:build cgo

package openvino

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// closedObjects is the schema a structured answer is generated against:
// every object schema that lists properties but says nothing of others
// gets "additionalProperties": false, so the generated document holds
// the listed properties only (as OpenAI's strict mode requires of a
// schema, and as constrained decoders generate by default). Such a
// document is valid against the original schema too, which the bridge
// holds the answer to. Keys keep their order.
func closedObjects(schema []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	v, err := readOrdered(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	if err := v.write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxSchemaDepth bounds the nesting closedObjects walks (the schema was
// bounded in size by the API already).
const maxSchemaDepth = 128

// ordered is a JSON value whose objects keep their keys' order.
type ordered struct {
	scalar json.RawMessage // a string, number, bool or null, as JSON
	keys   []string        // an object's keys, in order
	object map[string]*ordered
	array  []*ordered
	isObj  bool
	isArr  bool
}

func readOrdered(dec *json.Decoder, depth int) (*ordered, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxSchemaDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &ordered{isObj: true, object: map[string]*ordered{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string) // an object's keys are strings
				child, err := readOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := v.object[key]; !dup {
					v.keys = append(v.keys, key)
				}
				v.object[key] = child
			}
			_, err := dec.Token()
			if v.object["properties"] != nil && v.object["additionalProperties"] == nil {
				v.keys = append(v.keys, "additionalProperties")
				v.object["additionalProperties"] = &ordered{scalar: json.RawMessage("false")}
			}
			return v, err
		case '[':
			v := &ordered{isArr: true}
			for dec.More() {
				child, err := readOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.array = append(v.array, child)
			}
			_, err := dec.Token()
			return v, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		raw, err := json.Marshal(t)
		return &ordered{scalar: raw}, err
	}
}

func (v *ordered) write(b *bytes.Buffer) error {
	switch {
	case v.isObj:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			key, err := json.Marshal(k)
			if err != nil {
				return err
			}
			b.Write(key)
			b.WriteByte(':')
			if err := v.object[k].write(b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case v.isArr:
		b.WriteByte('[')
		for i, c := range v.array {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.write(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		b.Write(v.scalar)
	}
	return nil
}
