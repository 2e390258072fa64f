package jsonschema

import (
	"math"
	"slices"
	"strings"
)

// Bounds on a schema.
const (
	// MaxSchemaBytes bounds the schema's text.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth bounds its nesting (of the JSON text, and of allOf
	// and $ref merges).
	MaxSchemaDepth = 64
	// MaxNodes bounds the compiled schema (enum values, anyOf branches
	// distributed over their siblings, and every nested schema count).
	MaxNodes = 10000
	// maxAlternatives bounds the simple schemas one value may be.
	maxAlternatives = 1024
)

// Schema is a compiled JSON Schema.
type Schema struct {
	root *node
}

// annotations are keywords that say nothing about which documents are valid.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$schema": true, "$id": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// constraints are the keywords npud holds a document to.
var constraints = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"minItems": true, "maxItems": true, "enum": true, "const": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "minLength": true, "maxLength": true,
	"anyOf": true, "oneOf": true, "allOf": true, "$ref": true, "$defs": true, "definitions": true,
}

type compiler struct {
	rootValue *value
	defs      map[string]*def // by reference ("#/$defs/A")
	refs      []*node
	all       []*node
	paths     map[*node]string
	nodes     int
	any       *node
}

type def struct {
	v    *value
	path string
	n    *node // set when compiled
}

// Compile reads a JSON Schema. A keyword npud cannot guarantee is an
// *UnsupportedError naming it; a schema that is not valid, or too large,
// a *SchemaError.
func Compile(schema []byte) (*Schema, error) {
	if len(schema) > MaxSchemaBytes {
		return nil, &SchemaError{Message: "larger than 256 KiB"}
	}
	v, err := parseDocument(schema)
	if err != nil {
		return nil, &SchemaError{Message: err.Error()}
	}
	if depthOf(v) > MaxSchemaDepth {
		return nil, &SchemaError{Message: "nested too deep"}
	}
	c := &compiler{rootValue: v, defs: map[string]*def{}, paths: map[*node]string{}}
	if v.kind == 'o' {
		for _, kw := range []string{"$defs", "definitions"} {
			d, ok := v.member(kw)
			if !ok {
				continue
			}
			if d.kind != 'o' {
				return nil, &SchemaError{Path: "/" + kw, Message: "must be an object"}
			}
			for i, name := range d.keys {
				c.defs["#"+pointer("/"+kw, name)] = &def{v: d.vals[i], path: pointer("/"+kw, name)}
			}
		}
	}
	c.defs["#"] = &def{v: v}
	root, err := c.compile(v, "", true)
	if err != nil {
		return nil, err
	}
	c.defs["#"].n = root
	// Definitions are compiled once each, when first referenced.
	for pending := true; pending; {
		pending = false
		for _, r := range c.refs {
			d := c.defs[r.ref]
			if d.n == nil {
				pending = true
				// References inside resolve by name in finish, so a
				// definition that refers to itself compiles once.
				n, err := c.compile(d.v, d.path, false)
				if err != nil {
					return nil, err
				}
				d.n = n
			}
		}
	}
	if err := c.finish(root); err != nil {
		return nil, err
	}
	return &Schema{root: root}, nil
}

// AnyObject is JSON mode's schema: any JSON object.
func AnyObject() *Schema {
	c := &compiler{paths: map[*node]string{}}
	obj := anyNode(c).alts[0]
	if err := c.finish(obj); err != nil {
		panic(err) // unreachable: any object is finite
	}
	return &Schema{root: obj}
}

func depthOf(v *value) int {
	d := 0
	for _, c := range append(slices.Clone(v.vals), v.items...) {
		d = max(d, depthOf(c))
	}
	if v.kind == 'o' || v.kind == 'a' {
		d++
	}
	return d
}

func (c *compiler) add(n *node, path string) (*node, error) {
	c.nodes++
	if c.nodes > MaxNodes {
		return nil, &SchemaError{Path: path, Message: "too many schemas (more than 10000 after enum, anyOf and allOf are expanded)"}
	}
	c.all = append(c.all, n)
	c.paths[n] = path
	return n, nil
}

// compile compiles the schema v found at path.
func (c *compiler) compile(v *value, path string, root bool) (*node, error) {
	if v.kind == 't' {
		return anyNode(c), nil
	}
	if v.kind == 'f' {
		return nil, &SchemaError{Path: path, Message: "the schema false allows no document"}
	}
	if v.kind != 'o' {
		return nil, &SchemaError{Path: path, Message: "a schema must be an object or a boolean"}
	}
	for _, k := range v.keys {
		if !annotations[k] && !constraints[k] {
			return nil, &UnsupportedError{Keyword: k, Path: path}
		}
		if (k == "$defs" || k == "definitions") && !root {
			return nil, &UnsupportedError{Keyword: k, Path: path}
		}
	}
	v, err := c.merge(v, path, 0)
	if err != nil {
		return nil, err
	}
	if r, ok := v.member("$ref"); ok {
		return c.reference(v, r, path)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if branches, ok := v.member(kw); ok {
			return c.union(v, kw, branches, path)
		}
	}
	if _, ok := v.member("enum"); ok {
		return c.enum(v, path)
	}
	if _, ok := v.member("const"); ok {
		return c.enum(v, path)
	}
	return c.typed(v, path)
}

// reference is a $ref, whose siblings may only be annotations.
func (c *compiler) reference(v, r *value, path string) (*node, error) {
	for _, k := range v.keys {
		if k != "$ref" && !annotations[k] && k != "$defs" && k != "definitions" {
			return nil, &UnsupportedError{Keyword: k, Path: pointer(path, k) + " (beside $ref)"}
		}
	}
	if r.kind != 's' {
		return nil, &SchemaError{Path: pointer(path, "$ref"), Message: "must be a string"}
	}
	if _, ok := c.defs[r.str]; !ok {
		if strings.HasPrefix(r.str, "#/$defs/") || strings.HasPrefix(r.str, "#/definitions/") {
			return nil, &SchemaError{Path: pointer(path, "$ref"), Message: "no definition " + r.str}
		}
		return nil, &UnsupportedError{Keyword: "$ref", Path: pointer(path, "$ref")}
	}
	n, err := c.add(&node{kind: kRef, ref: r.str}, path)
	if err != nil {
		return nil, err
	}
	c.refs = append(c.refs, n)
	return n, nil
}

// union is anyOf or oneOf; the keywords beside it apply to every branch.
func (c *compiler) union(v *value, kw string, branches *value, path string) (*node, error) {
	if branches.kind != 'a' || len(branches.items) == 0 {
		return nil, &SchemaError{Path: pointer(path, kw), Message: "must be a non-empty array"}
	}
	if _, both := v.member(map[string]string{"anyOf": "oneOf", "oneOf": "anyOf"}[kw]); both {
		return nil, &UnsupportedError{Keyword: "oneOf", Path: path + " (beside anyOf)"}
	}
	rest := without(v, kw)
	u := &node{kind: kUnion}
	for i, b := range branches.items {
		bpath := pointer(pointer(path, kw), itoa(i))
		if b.kind == 'o' && constrains(rest) {
			merged, err := mergeParts(rest, b, bpath)
			if err != nil {
				return nil, err
			}
			b = merged
		}
		n, err := c.compile(b, bpath, false)
		if err != nil {
			return nil, err
		}
		u.alts = append(u.alts, n)
	}
	if kw == "oneOf" {
		for i := range u.alts {
			for j := i + 1; j < len(u.alts); j++ {
				if !disjoint(u.alts[i], u.alts[j], 0) {
					return nil, &UnsupportedError{Keyword: "oneOf", Path: pointer(path, kw) + " (branches " + itoa(i) + " and " + itoa(j) + " may both match)"}
				}
			}
		}
	}
	return c.add(u, path)
}

// constrains: v has a keyword other than annotations.
func constrains(v *value) bool {
	for _, k := range v.keys {
		if !annotations[k] && k != "$defs" && k != "definitions" {
			return true
		}
	}
	return false
}

func without(v *value, drop ...string) *value {
	out := &value{kind: 'o'}
	for i, k := range v.keys {
		if !slices.Contains(drop, k) {
			out.keys, out.vals = append(out.keys, k), append(out.vals, v.vals[i])
		}
	}
	return out
}

// enum is enum or const: the values among them that the keywords beside
// them allow, each as a node of its own.
func (c *compiler) enum(v *value, path string) (*node, error) {
	var values []*value
	kw := "enum"
	if e, ok := v.member("enum"); ok {
		if e.kind != 'a' || len(e.items) == 0 {
			return nil, &SchemaError{Path: pointer(path, "enum"), Message: "must be a non-empty array"}
		}
		values = e.items
	}
	if k, ok := v.member("const"); ok {
		kw = "const"
		if values != nil && !slices.ContainsFunc(values, k.equal) {
			values = nil
		} else {
			values = []*value{k}
		}
	}
	rest, err := c.typed(without(v, "enum", "const"), path)
	if err != nil {
		return nil, err
	}
	u := &node{kind: kUnion}
	for i, val := range values {
		if validate(val, rest) != nil || slices.ContainsFunc(values[:i], val.equal) {
			continue
		}
		n, err := c.literal(val, path)
		if err != nil {
			return nil, err
		}
		u.alts = append(u.alts, n)
	}
	if len(u.alts) == 0 {
		return nil, &SchemaError{Path: pointer(path, kw), Message: "no value allowed by the schema"}
	}
	if len(u.alts) == 1 {
		return u.alts[0], nil
	}
	return c.add(u, path)
}

// literal is a node whose one valid document is val.
func (c *compiler) literal(val *value, path string) (*node, error) {
	n := simpleOf(kNull)
	switch val.kind {
	case 's':
		n.kind = kString
		s := val.str
		n.exact = &s
	case 'n':
		n.kind = kNumber
		n.exactNum = val
	case 't', 'f':
		n.kind = kBool
		b := val.kind == 't'
		n.exactBool = &b
	case 'a':
		n.kind, n.isTuple = kArray, true
		for _, it := range val.items {
			t, err := c.literal(it, path)
			if err != nil {
				return nil, err
			}
			n.tuple = append(n.tuple, t)
		}
	case 'o':
		n.kind = kObject
		n.propIndex = map[string]int{}
		for i, k := range val.keys {
			p, err := c.literal(val.vals[i], path)
			if err != nil {
				return nil, err
			}
			n.propIndex[k] = len(n.props)
			n.props = append(n.props, prop{name: k, schema: p, required: true})
		}
		n.nRequired = len(n.props)
	}
	return c.add(n, path)
}

// typed is a schema without $ref, anyOf, oneOf, enum or const: one node per
// type it allows.
func (c *compiler) typed(v *value, path string) (*node, error) {
	types := []kind{kObject, kArray, kString, kNumber, kBool, kNull}
	if t, ok := v.member("type"); ok {
		var err error
		if types, err = typeList(t, pointer(path, "type")); err != nil {
			return nil, err
		}
	} else if !constrains(without(v, "enum", "const")) {
		return anyNode(c), nil
	}
	var alts []*node
	for _, k := range types {
		n, err := c.simple(v, k, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.add(&node{kind: kUnion, alts: alts}, path)
}

func typeList(t *value, path string) ([]kind, error) {
	names := []*value{t}
	if t.kind == 'a' {
		names = t.items
	}
	var kinds []kind
	for _, name := range names {
		k, ok := map[string]kind{"object": kObject, "array": kArray, "string": kString, "number": kNumber,
			"integer": kInteger, "boolean": kBool, "null": kNull}[name.str]
		if name.kind != 's' || !ok {
			return nil, &SchemaError{Path: path, Message: "not a JSON Schema type"}
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, &SchemaError{Path: path, Message: "no type"}
	}
	if slices.Contains(kinds, kNumber) { // every integer is a number
		kinds = slices.DeleteFunc(kinds, func(k kind) bool { return k == kInteger })
	}
	return kinds, nil
}

// simple is the node of type k under v's keywords (those of other types
// do not apply to it).
func (c *compiler) simple(v *value, k kind, path string) (*node, error) {
	n := simpleOf(k)
	var err error
	switch k {
	case kObject:
		err = c.object(n, v, path)
	case kArray:
		err = c.array(n, v, path)
	case kString:
		n.minLen, n.maxLen, err = bounds(v, "minLength", "maxLength", path)
		if err == nil && n.maxLen >= 0 && n.minLen > n.maxLen {
			err = &SchemaError{Path: pointer(path, "minLength"), Message: "greater than maxLength"}
		}
	case kNumber, kInteger:
		err = numberBounds(n, v, path)
	}
	if err != nil {
		return nil, err
	}
	return c.add(n, path)
}

func (c *compiler) object(n *node, v *value, path string) error {
	n.propIndex = map[string]int{}
	if props, ok := v.member("properties"); ok {
		if props.kind != 'o' {
			return &SchemaError{Path: pointer(path, "properties"), Message: "must be an object"}
		}
		for i, name := range props.keys {
			s, err := c.compile(props.vals[i], pointer(pointer(path, "properties"), name), false)
			if err != nil {
				return err
			}
			n.propIndex[name] = len(n.props)
			n.props = append(n.props, prop{name: name, schema: s})
		}
	}
	n.additional = anyNode(c)
	if ap, ok := v.member("additionalProperties"); ok {
		switch ap.kind {
		case 'f':
			n.additional = nil
		case 't':
		default:
			s, err := c.compile(ap, pointer(path, "additionalProperties"), false)
			if err != nil {
				return err
			}
			n.additional = s
		}
	}
	if req, ok := v.member("required"); ok {
		if req.kind != 'a' {
			return &SchemaError{Path: pointer(path, "required"), Message: "must be an array of strings"}
		}
		for _, r := range req.items {
			if r.kind != 's' {
				return &SchemaError{Path: pointer(path, "required"), Message: "must be an array of strings"}
			}
			i, ok := n.propIndex[r.str]
			if !ok {
				if n.additional == nil {
					return &SchemaError{Path: pointer(path, "required"), Message: "requires " + r.str + ", which additionalProperties false forbids"}
				}
				// Required but not described: it is an additional property
				// every document must have; described as such.
				i = len(n.props)
				n.propIndex[r.str] = i
				n.props = append(n.props, prop{name: r.str, schema: n.additional})
			}
			if !n.props[i].required {
				n.props[i].required = true
				n.nRequired++
			}
		}
	}
	return nil
}

func (c *compiler) array(n *node, v *value, path string) error {
	n.items = anyNode(c)
	if it, ok := v.member("items"); ok {
		if it.kind == 'a' {
			return &UnsupportedError{Keyword: "items", Path: pointer(path, "items") + " (an array of schemas)"}
		}
		s, err := c.compile(it, pointer(path, "items"), false)
		if err != nil {
			return err
		}
		n.items = s
	}
	var err error
	n.minItems, n.maxItems, err = bounds(v, "minItems", "maxItems", path)
	if err == nil && n.maxItems >= 0 && n.minItems > n.maxItems {
		err = &SchemaError{Path: pointer(path, "minItems"), Message: "greater than maxItems"}
	}
	return err
}

// bounds reads a pair of non-negative integer keywords; hi is -1 when absent.
func bounds(v *value, loKw, hiKw, path string) (lo, hi int, err error) {
	read := func(kw string, absent int) (int, error) {
		b, ok := v.member(kw)
		if !ok {
			return absent, nil
		}
		if b.kind != 'n' || b.num < 0 || b.num != math.Trunc(b.num) || b.num > 1<<30 {
			return 0, &SchemaError{Path: pointer(path, kw), Message: "must be a non-negative integer"}
		}
		return int(b.num), nil
	}
	if lo, err = read(loKw, 0); err != nil {
		return 0, 0, err
	}
	hi, err = read(hiKw, -1)
	return lo, hi, err
}

func numberBounds(n *node, v *value, path string) error {
	read := func(kw string) (float64, bool, error) {
		b, ok := v.member(kw)
		if !ok {
			return 0, false, nil
		}
		if b.kind != 'n' {
			return 0, false, &SchemaError{Path: pointer(path, kw), Message: "must be a number"}
		}
		return b.num, true, nil
	}
	var err error
	var x float64
	var ok bool
	if n.min, n.hasMin, err = read("minimum"); err != nil {
		return err
	}
	if n.max, n.hasMax, err = read("maximum"); err != nil {
		return err
	}
	if x, ok, err = read("exclusiveMinimum"); err != nil {
		return err
	} else if ok && (!n.hasMin || x >= n.min) {
		n.min, n.hasMin, n.exclusiveMin = x, true, true
	}
	if x, ok, err = read("exclusiveMaximum"); err != nil {
		return err
	} else if ok && (!n.hasMax || x <= n.max) {
		n.max, n.hasMax, n.exclMx = x, true, true
	}
	if _, _, ok := generateNumber(n, 0); !ok {
		return &SchemaError{Path: path, Message: "no number is within minimum and maximum"}
	}
	return nil
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
