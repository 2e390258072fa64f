package chatfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// CheckArguments says what is wrong with a call's arguments for the
// declared JSON schema ("" when nothing is): not a JSON object, a required
// property missing, a property of the wrong type.
func CheckArguments(args string, schema json.RawMessage) string {
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &got); err != nil {
		return "its arguments are not a JSON object"
	}
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	for _, name := range s.Required {
		if _, ok := got[name]; !ok {
			return fmt.Sprintf("required argument %q is missing", name)
		}
	}
	for name, v := range got {
		prop, ok := s.Properties[name]
		if !ok || len(prop.Type) == 0 {
			continue
		}
		var types []string
		var one string
		if json.Unmarshal(prop.Type, &one) == nil {
			types = []string{one}
		} else if json.Unmarshal(prop.Type, &types) != nil {
			continue
		}
		if !jsonTypeIn(v, types) {
			return fmt.Sprintf("argument %q is not of type %s", name, strings.Join(types, " or "))
		}
	}
	return ""
}

func jsonTypeIn(v json.RawMessage, types []string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	for _, t := range types {
		switch c := v[0]; t {
		case "string":
			if c == '"' {
				return true
			}
		case "object":
			if c == '{' {
				return true
			}
		case "array":
			if c == '[' {
				return true
			}
		case "boolean":
			if c == 't' || c == 'f' {
				return true
			}
		case "null":
			if c == 'n' {
				return true
			}
		case "number":
			if c == '-' || (c >= '0' && c <= '9') {
				return true
			}
		case "integer":
			var n json.Number
			if (c == '-' || (c >= '0' && c <= '9')) && json.Unmarshal(v, &n) == nil {
				if _, err := n.Int64(); err == nil {
					return true
				}
			}
		default:
			return true // a type npud does not check
		}
	}
	return false
}
