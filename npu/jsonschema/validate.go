package jsonschema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("the document does not match the schema")

// Validate checks a whole document (whitespace around it allowed) against
// the schema. It reads the document apart from the Matcher, as a tree, and
// agrees with it on every document.
func (s *Schema) Validate(doc []byte) error {
	v, err := parseDocument(doc)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return validate(v, s.root)
}

func invalid(path, format string, args ...any) error {
	if path == "" {
		path = "/"
	}
	return fmt.Errorf("%w: at %s: %s", ErrInvalid, path, fmt.Sprintf(format, args...))
}

func validate(v *value, n *node) error { return validateAt(v, n, "") }

func validateAt(v *value, n *node, path string) error {
	switch n.kind {
	case kRef:
		if n.target == nil {
			return invalid(path, "unresolved reference %s", n.ref)
		}
		return validateAt(v, n.target, path)
	case kUnion:
		var first error
		for _, a := range n.alts {
			err := validateAt(v, a, path)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		if len(n.alts) == 1 {
			return first
		}
		return invalid(path, "matches none of the schemas allowed here")
	}
	switch v.kind {
	case 'o':
		if n.kind == kObject {
			return validateObject(v, n, path)
		}
	case 'a':
		if n.kind == kArray {
			return validateArray(v, n, path)
		}
	case 's':
		if n.kind == kString {
			return validateString(v.str, n, path)
		}
	case 'n':
		if n.kind == kNumber || n.kind == kInteger && !strings.ContainsAny(v.str, ".eE") {
			if !numberAllowed(n, v.num) {
				return invalid(path, "%s is out of range", v.str)
			}
			return nil
		}
	case 't', 'f':
		if n.kind == kBool {
			if n.exactBool != nil && *n.exactBool != (v.kind == 't') {
				return invalid(path, "must be %t", *n.exactBool)
			}
			return nil
		}
	case 'z':
		if n.kind == kNull {
			return nil
		}
	}
	return invalid(path, "must be %s", typeName(n.kind))
}

func typeName(k kind) string {
	return [...]string{"an object", "an array", "a string", "a number", "an integer (no fraction or exponent)", "a boolean", "null"}[k]
}

func validateObject(v *value, n *node, path string) error {
	required := 0
	for i, k := range v.keys {
		sub := pointer(path, k)
		if j, ok := n.propIndex[k]; ok {
			p := n.props[j]
			if p.required {
				required++
			}
			if err := validateAt(v.vals[i], p.schema, sub); err != nil {
				return err
			}
			continue
		}
		if n.additional == nil {
			return invalid(path, "property %s is not allowed", strconv.Quote(k))
		}
		if err := validateAt(v.vals[i], n.additional, sub); err != nil {
			return err
		}
	}
	if required < n.nRequired {
		for _, p := range n.props {
			if _, ok := v.member(p.name); p.required && !ok {
				return invalid(path, "property %s is required", strconv.Quote(p.name))
			}
		}
	}
	return nil
}

func validateArray(v *value, n *node, path string) error {
	count := len(v.items)
	if n.isTuple {
		if count != len(n.tuple) {
			return invalid(path, "must have %d items", len(n.tuple))
		}
	} else if count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
		return invalid(path, "has %d items, outside %d to %d", count, n.minItems, n.maxItems)
	}
	for i, it := range v.items {
		s := n.items
		if n.isTuple {
			s = n.tuple[i]
		}
		if err := validateAt(it, s, pointer(path, strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

func validateString(s string, n *node, path string) error {
	if n.exact != nil {
		if s != *n.exact {
			return invalid(path, "must be %s", strconv.Quote(*n.exact))
		}
		return nil
	}
	count := utf8.RuneCountInString(s)
	if count < n.minLen || n.maxLen >= 0 && count > n.maxLen {
		return invalid(path, "length %d is outside %d to %d", count, n.minLen, n.maxLen)
	}
	return nil
}

// numberAllowed: x is within n's bounds, or its constant.
func numberAllowed(n *node, x float64) bool {
	if n.exactNum != nil {
		return x == n.exactNum.num
	}
	if n.hasMin && (x < n.min || n.exclusiveMin && x == n.min) {
		return false
	}
	if n.hasMax && (x > n.max || n.exclMx && x == n.max) {
		return false
	}
	return true
}
