package jsonschema

import (
	"errors"
	"slices"
)

// merge folds allOf into v; its parts must not conflict.
func (c *compiler) merge(v *value, path string, depth int) (*value, error) {
	all, ok := v.member("allOf")
	if !ok {
		return v, nil
	}
	if all.kind != 'a' || len(all.items) == 0 {
		return nil, &SchemaError{Path: pointer(path, "allOf"), Message: "must be a non-empty array"}
	}
	if depth > MaxSchemaDepth {
		return nil, &SchemaError{Path: path, Message: "allOf and $ref nested too deep"}
	}
	out := without(v, "allOf")
	if len(all.items) == 1 && !constrains(out) && all.items[0].kind == 'o' {
		// allOf of one schema beside annotations (what pydantic writes
		// around a $ref): that schema, a reference kept a reference so
		// that recursion stays possible.
		return mergeAnnotations(all.items[0], out), nil
	}
	for i, part := range all.items {
		ppath := pointer(pointer(path, "allOf"), itoa(i))
		if part.kind != 'o' {
			return nil, &SchemaError{Path: ppath, Message: "must be an object"}
		}
		for _, k := range part.keys {
			if !annotations[k] && !constraints[k] || k == "$defs" || k == "definitions" {
				return nil, &UnsupportedError{Keyword: k, Path: ppath}
			}
		}
		if r, ok := part.member("$ref"); ok {
			d, found := c.defs[r.str]
			if r.kind != 's' || !found || constrains(without(part, "$ref")) {
				return nil, &UnsupportedError{Keyword: "allOf", Path: ppath}
			}
			part = d.v
		}
		part, err := c.merge(part, ppath, depth+1)
		if err != nil {
			return nil, err
		}
		if out, err = mergeParts(out, part, ppath); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeAnnotations adds ann's keywords (annotations only) that v lacks.
func mergeAnnotations(v, ann *value) *value {
	out := &value{kind: 'o', keys: slices.Clone(v.keys), vals: slices.Clone(v.vals)}
	for i, k := range ann.keys {
		if _, ok := out.member(k); !ok {
			out.keys, out.vals = append(out.keys, k), append(out.vals, ann.vals[i])
		}
	}
	return out
}

var errConflict = errors.New("conflict")

// mergeParts is a schema that holds a document to both a and b's keywords:
// properties and required are joined; any other keyword in both must be
// equal, and a part's additionalProperties must allow the other's
// properties.
func mergeParts(a, b *value, path string) (*value, error) {
	out := &value{kind: 'o', keys: slices.Clone(a.keys), vals: slices.Clone(a.vals)}
	for i, k := range b.keys {
		bv := b.vals[i]
		av, ok := out.member(k)
		if !ok || annotations[k] {
			if !ok {
				out.keys, out.vals = append(out.keys, k), append(out.vals, bv)
			}
			continue
		}
		var merged *value
		var err error
		switch k {
		case "properties":
			merged, err = joinObjects(av, bv)
		case "required":
			merged = &value{kind: 'a', items: slices.Clone(av.items)}
			for _, r := range bv.items {
				if !slices.ContainsFunc(merged.items, r.equal) {
					merged.items = append(merged.items, r)
				}
			}
		default:
			if !av.equal(bv) {
				err = errConflict
			}
			merged = av
		}
		if err != nil {
			return nil, &UnsupportedError{Keyword: "allOf", Path: path + " (" + k + " conflicts)"}
		}
		out.vals[slices.Index(out.keys, k)] = merged
	}
	for _, pair := range [][2]*value{{a, b}, {b, a}} {
		if ap, ok := pair[0].member("additionalProperties"); ok && ap.kind != 't' {
			own, _ := pair[0].member("properties")
			other, _ := pair[1].member("properties")
			if other != nil && other.kind == 'o' {
				for _, name := range other.keys {
					if own == nil {
						return nil, &UnsupportedError{Keyword: "allOf", Path: path + " (additionalProperties conflicts)"}
					}
					if _, ok := own.member(name); !ok {
						return nil, &UnsupportedError{Keyword: "allOf", Path: path + " (additionalProperties conflicts)"}
					}
				}
			}
		}
	}
	return out, nil
}

func joinObjects(a, b *value) (*value, error) {
	if a.kind != 'o' || b.kind != 'o' {
		return nil, errConflict
	}
	out := &value{kind: 'o', keys: slices.Clone(a.keys), vals: slices.Clone(a.vals)}
	for i, k := range b.keys {
		if av, ok := out.member(k); ok {
			if !av.equal(b.vals[i]) {
				return nil, errConflict
			}
			continue
		}
		out.keys, out.vals = append(out.keys, k), append(out.vals, b.vals[i])
	}
	return out, nil
}

// disjoint: no document is valid against both a and b (checked as far as
// types, constants and a shared required property with disjoint values
// tell; depth bounds the recursion).
func disjoint(a, b *node, depth int) bool {
	if depth > 8 {
		return false
	}
	xs, okA := known(a, nil)
	ys, okB := known(b, nil)
	if !okA || !okB {
		return false
	}
	for _, x := range xs {
		for _, y := range ys {
			if !disjointSimple(x, y, depth) {
				return false
			}
		}
	}
	return true
}

func disjointSimple(x, y *node, depth int) bool {
	kx, ky := x.kind, y.kind
	if kx == kInteger {
		kx = kNumber
	}
	if ky == kInteger {
		ky = kNumber
	}
	if kx != ky {
		return true
	}
	switch kx {
	case kString:
		return x.exact != nil && y.exact != nil && *x.exact != *y.exact
	case kNumber:
		return x.exactNum != nil && y.exactNum != nil && x.exactNum.num != y.exactNum.num
	case kBool:
		return x.exactBool != nil && y.exactBool != nil && *x.exactBool != *y.exactBool
	case kObject:
		for _, p := range x.props {
			if i, ok := y.propIndex[p.name]; ok && p.required && y.props[i].required &&
				disjoint(p.schema, y.props[i].schema, depth+1) {
				return true
			}
		}
	}
	return false
}

// known lists n's simple alternatives while compiling; false when a
// reference hides them (oneOf's check runs before references resolve).
func known(n *node, out []*node) ([]*node, bool) {
	switch n.kind {
	case kRef:
		return nil, false
	case kUnion:
		for _, a := range n.alts {
			var ok bool
			if out, ok = known(a, out); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return append(out, n), true
}
