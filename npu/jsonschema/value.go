package jsonschema

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Bounds on a document, the same for Validate and the Matcher so that the
// two agree on every input.
const (
	// MaxDocumentDepth is the deepest nesting of objects and arrays.
	MaxDocumentDepth = 128
	// MaxKeyBytes bounds one object key (decoded).
	MaxKeyBytes = 4096
	// MaxNumberBytes bounds one number's text.
	MaxNumberBytes = 256
)

// value is a parsed JSON document: objects keep their members in order
// (a schema's property order is the order Forced and Generate write them).
type value struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 't' true, 'f' false, 'z' null
	str   string
	num   float64 // a number's value (its text is str)
	keys  []string
	vals  []*value
	items []*value
}

func (v *value) member(key string) (*value, bool) {
	for i, k := range v.keys {
		if k == key {
			return v.vals[i], true
		}
	}
	return nil, false
}

// equal is JSON equality: numbers by value, objects regardless of order.
func (v *value) equal(w *value) bool {
	if v.kind != w.kind {
		return false
	}
	switch v.kind {
	case 's':
		return v.str == w.str
	case 'n':
		return v.num == w.num
	case 'a':
		if len(v.items) != len(w.items) {
			return false
		}
		for i := range v.items {
			if !v.items[i].equal(w.items[i]) {
				return false
			}
		}
		return true
	case 'o':
		if len(v.keys) != len(w.keys) {
			return false
		}
		for i, k := range v.keys {
			o, ok := w.member(k)
			if !ok || !v.vals[i].equal(o) {
				return false
			}
		}
		return true
	}
	return true
}

var errSyntax = errors.New("not valid JSON")

// parser reads one JSON document strictly: valid UTF-8, paired
// surrogates, no duplicate keys, within the document bounds.
type parser struct {
	s   []byte
	i   int
	err error
}

func parseDocument(doc []byte) (*value, error) {
	p := &parser{s: doc}
	p.ws()
	v := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.ws()
	if p.i != len(p.s) {
		p.fail("text after the document")
		return nil, p.err
	}
	return v, nil
}

func (p *parser) fail(what string) *value {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s at byte %d", errSyntax, what, p.i)
	}
	return nil
}

func (p *parser) ws() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) value(depth int) *value {
	if p.i >= len(p.s) {
		return p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		if depth >= MaxDocumentDepth {
			return p.fail("nested too deep")
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.string(0)
		if !ok {
			return nil
		}
		return &value{kind: 's', str: s}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", 't')
	case c == 'f':
		return p.literal("false", 'f')
	case c == 'n':
		return p.literal("null", 'z')
	}
	return p.fail("unexpected character")
}

func (p *parser) literal(word string, kind byte) *value {
	if len(p.s)-p.i < len(word) || string(p.s[p.i:p.i+len(word)]) != word {
		return p.fail("bad literal")
	}
	p.i += len(word)
	return &value{kind: kind}
}

func (p *parser) object(depth int) *value {
	p.i++ // {
	v := &value{kind: 'o'}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return p.fail("expected a key")
		}
		k, ok := p.string(MaxKeyBytes)
		if !ok {
			return nil
		}
		if _, dup := v.member(k); dup {
			return p.fail("duplicate key " + strconv.Quote(k))
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return p.fail("expected ':'")
		}
		p.i++
		p.ws()
		m := p.value(depth)
		if m == nil {
			return nil
		}
		v.keys, v.vals = append(v.keys, k), append(v.vals, m)
		p.ws()
		if p.i >= len(p.s) {
			return p.fail("unexpected end")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v
		default:
			return p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) *value {
	p.i++ // [
	v := &value{kind: 'a'}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v
	}
	for {
		p.ws()
		m := p.value(depth)
		if m == nil {
			return nil
		}
		v.items = append(v.items, m)
		p.ws()
		if p.i >= len(p.s) {
			return p.fail("unexpected end")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v
		default:
			return p.fail("expected ',' or ']'")
		}
	}
}

// string reads a string token; limit > 0 bounds its decoded bytes.
func (p *parser) string(limit int) (string, bool) {
	p.i++ // "
	var b []byte
	for {
		if limit > 0 && len(b) > limit {
			p.fail("key too long")
			return "", false
		}
		if p.i >= len(p.s) {
			p.fail("unterminated string")
			return "", false
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), true
		case c < 0x20:
			p.fail("control character in a string")
			return "", false
		case c == '\\':
			r, ok := p.escape()
			if !ok {
				return "", false
			}
			b = utf8.AppendRune(b, r)
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.s[p.i:])
			if r == utf8.RuneError && size <= 1 {
				p.fail("invalid UTF-8")
				return "", false
			}
			b = append(b, p.s[p.i:p.i+size]...)
			p.i += size
		}
	}
}

// escape reads one escape sequence (a surrogate pair as one).
func (p *parser) escape() (rune, bool) {
	if p.i+1 >= len(p.s) {
		p.fail("unterminated escape")
		return 0, false
	}
	c := p.s[p.i+1]
	p.i += 2
	if r, ok := simpleEscape(c); ok {
		return r, true
	}
	if c != 'u' {
		p.fail("bad escape")
		return 0, false
	}
	r, ok := p.hex4()
	if !ok {
		return 0, false
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		p.fail("lone low surrogate")
		return 0, false
	case r >= 0xD800 && r <= 0xDBFF:
		if p.i+1 >= len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
			p.fail("lone high surrogate")
			return 0, false
		}
		p.i += 2
		lo, ok := p.hex4()
		if !ok {
			return 0, false
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			p.fail("lone high surrogate")
			return 0, false
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), true
	}
	return r, true
}

func (p *parser) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		p.fail("short \\u escape")
		return 0, false
	}
	var r rune
	for _, c := range p.s[p.i : p.i+4] {
		d, ok := hexDigit(c)
		if !ok {
			p.fail("bad \\u escape")
			return 0, false
		}
		r = r<<4 | d
	}
	p.i += 4
	return r, true
}

func simpleEscape(c byte) (rune, bool) {
	switch c {
	case '"', '\\', '/':
		return rune(c), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func hexDigit(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

func (p *parser) number() *value {
	start := p.i
	var st numState
	for p.i < len(p.s) {
		next, ok := st.next(p.s[p.i])
		if !ok {
			break
		}
		st = next
		p.i++
		if p.i-start > MaxNumberBytes {
			return p.fail("number too long")
		}
	}
	if !st.final() {
		return p.fail("bad number")
	}
	text := string(p.s[start:p.i])
	return &value{kind: 'n', str: text, num: parseNumber(text)}
}

// parseNumber is a number's value; one past float64's range is ±Inf.
func parseNumber(text string) float64 {
	f, _ := strconv.ParseFloat(text, 64) //nolint:errcheck // out of range: ±Inf or 0, compared as such
	return f
}

// numState is where a number's text is in JSON's grammar.
type numState uint8

const (
	numStart    numState = iota // nothing yet
	numMinus                    // "-"
	numZero                     // a leading 0
	numInt                      // integer digits
	numDot                      // "."
	numFrac                     // fraction digits
	numExp                      // "e"
	numExpSign                  // "e+" or "e-"
	numExpDigit                 // exponent digits
)

// next is the state after c, false when c cannot continue the number.
func (s numState) next(c byte) (numState, bool) {
	digit := c >= '0' && c <= '9'
	switch s {
	case numStart:
		switch {
		case c == '-':
			return numMinus, true
		case c == '0':
			return numZero, true
		case digit:
			return numInt, true
		}
	case numMinus:
		switch {
		case c == '0':
			return numZero, true
		case digit:
			return numInt, true
		}
	case numZero, numInt:
		switch {
		case digit && s == numInt:
			return numInt, true
		case c == '.':
			return numDot, true
		case c == 'e' || c == 'E':
			return numExp, true
		}
	case numDot, numFrac:
		switch {
		case digit:
			return numFrac, true
		case s == numFrac && (c == 'e' || c == 'E'):
			return numExp, true
		}
	case numExp:
		switch {
		case c == '+' || c == '-':
			return numExpSign, true
		case digit:
			return numExpDigit, true
		}
	case numExpSign, numExpDigit:
		if digit {
			return numExpDigit, true
		}
	}
	return s, false
}

// final: the text so far is a whole number.
func (s numState) final() bool {
	return s == numZero || s == numInt || s == numFrac || s == numExpDigit
}

// continuesNumber: c could be part of some number's text.
func continuesNumber(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
