// Package jsonschema holds a JSON document to a JSON Schema: Compile reads
// the subset npud can guarantee (and names any keyword outside it), Validate
// checks a whole document, a Matcher checks one as it streams in and says
// what the schema fixes next (what a constrained decoder inserts), and
// Generate writes a valid document (the simulated engine's answer).
//
// A leaf: it imports nothing of npud's, so the bridge (npu/serve) and the
// engines both use it.
package jsonschema

import (
	"fmt"
	"slices"
	"strings"
)

// kind is a node's JSON type; kUnion and kRef stand for other nodes.
type kind uint8

const (
	kObject kind = iota
	kArray
	kString
	kNumber
	kInteger
	kBool
	kNull
	kUnion // any of alts
	kRef   // target, filled once every definition is compiled
)

// node is one compiled schema. A simple node (object … null) accepts one
// JSON type under its constraints; unions and references expand to simple
// nodes (flat) where a value starts.
type node struct {
	kind kind
	alts []*node // kUnion
	// kRef
	target *node
	ref    string
	// flat is the simple nodes a value of this node may be (every union
	// and reference followed), set after compiling.
	flat []*node

	// objects
	props      []prop
	propIndex  map[string]int
	nRequired  int
	additional *node // nil: no other properties allowed
	// arrays: items, or tuple for a const array (exactly its items)
	items              *node
	tuple              []*node
	isTuple            bool
	minItems, maxItems int // maxItems < 0: no bound
	// strings (minLen, maxLen in code points; maxLen < 0: no bound)
	minLen, maxLen int
	exact          *string // a const string
	// numbers
	min, max             float64
	hasMin, hasMax       bool
	exclusiveMin, exclMx bool
	exactNum             *value // a const number: equal by value; its text is what Forced writes
	// booleans
	exactBool *bool

	// minDepth is the least nesting a finite document of this node needs
	// (infinite: no finite document; see finite).
	minDepth int
}

type prop struct {
	name     string
	schema   *node
	required bool
}

const infinite = 1 << 30

func (n *node) simple() bool { return n.kind != kUnion && n.kind != kRef }

// anyNode is a node for any JSON value, built once per compiled schema.
func anyNode(c *compiler) *node {
	if c.any != nil {
		return c.any
	}
	u := &node{kind: kUnion}
	c.any = u
	obj := &node{kind: kObject, propIndex: map[string]int{}, additional: u, maxItems: -1, maxLen: -1}
	arr := &node{kind: kArray, items: u, maxItems: -1, maxLen: -1}
	u.alts = []*node{obj, arr, simpleOf(kString), simpleOf(kNumber), simpleOf(kBool), simpleOf(kNull)}
	c.nodes += len(u.alts) + 1
	c.all = append(c.all, u)
	c.all = append(c.all, u.alts...)
	return u
}

func simpleOf(k kind) *node { return &node{kind: k, maxItems: -1, maxLen: -1} }

// UnsupportedError names a schema keyword npud cannot guarantee, and where
// it is (a JSON pointer into the schema).
type UnsupportedError struct{ Keyword, Path string }

func (e *UnsupportedError) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("schema keyword %q at %s is not supported", e.Keyword, path)
}

// SchemaError is a schema that is not a valid JSON Schema, or one no
// document can satisfy.
type SchemaError struct{ Path, Message string }

func (e *SchemaError) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("schema at %s: %s", path, e.Message)
}

// pointer appends a JSON pointer token to path.
func pointer(path string, token string) string {
	return path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// finish resolves references, flattens unions and computes minDepth.
func (c *compiler) finish(root *node) error {
	for _, r := range c.refs {
		r.target = c.defs[r.ref].n
	}
	for _, n := range c.all {
		if !n.simple() {
			n.flat = flatten(n, nil, nil)
			if len(n.flat) > maxAlternatives {
				return &SchemaError{Path: c.paths[n], Message: "more than 1024 alternatives (anyOf, oneOf, enum, type) for one value"}
			}
		}
	}
	// minDepth by fixpoint: a node's finite documents are built from
	// finite documents of its parts.
	for _, n := range c.all {
		n.minDepth = infinite
	}
	for changed := true; changed; {
		changed = false
		for _, n := range c.all {
			if d := n.depthFromParts(); d < n.minDepth {
				n.minDepth, changed = d, true
			}
		}
	}
	for _, n := range c.all {
		if n.flat != nil {
			n.flat = slices.DeleteFunc(n.flat, func(a *node) bool { return a.minDepth >= infinite })
		}
	}
	if root.minDepth >= infinite {
		return &SchemaError{Message: "no finite document is valid (a $ref cycle every document must follow)"}
	}
	// A part no finite value satisfies would let a document begin that can
	// never end (an optional property, an item): refused where it is.
	for _, n := range c.all {
		if n.minDepth >= infinite {
			return &SchemaError{Path: c.paths[n], Message: "no finite value is valid here (a $ref cycle every value must follow)"}
		}
	}
	return nil
}

func (n *node) depthFromParts() int {
	switch n.kind {
	case kRef:
		return n.target.minDepth
	case kUnion:
		d := infinite
		for _, a := range n.alts {
			d = min(d, a.minDepth)
		}
		return d
	case kObject:
		d := 0
		for _, p := range n.props {
			if p.required {
				d = max(d, p.schema.minDepth)
			}
		}
		return min(infinite, d+1)
	case kArray:
		if n.isTuple {
			d := 0
			for _, t := range n.tuple {
				d = max(d, t.minDepth)
			}
			return min(infinite, d+1)
		}
		if n.minItems == 0 {
			return 1
		}
		return min(infinite, n.items.minDepth+1)
	}
	return 0
}

// flatten lists the simple nodes n may be; visiting guards left recursion
// (a reference back to a node being expanded adds nothing new).
func flatten(n *node, visiting []*node, out []*node) []*node {
	for _, v := range visiting {
		if v == n {
			return out
		}
	}
	switch n.kind {
	case kRef:
		return flatten(n.target, append(visiting, n), out)
	case kUnion:
		visiting = append(visiting, n)
		for _, a := range n.alts {
			out = flatten(a, visiting, out)
		}
		return out
	}
	for _, o := range out {
		if o == n {
			return out
		}
	}
	return append(out, n)
}

// alternatives are the simple nodes a value of n may be.
func (n *node) alternatives() []*node {
	if n.simple() {
		return []*node{n}
	}
	return n.flat
}
