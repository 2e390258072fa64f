package jsonschema

import (
	"slices"
	"unicode/utf8"
)

// MaxLiveStates bounds the readings of a document a Matcher keeps at once
// (a schema whose anyOf branches stay ambiguous over a deep document); past
// it Push refuses, failing closed.
const MaxLiveStates = 1024

// Matcher checks a document as it streams in, a byte at a time. It keeps
// every reading of the text so far that can still lead to a valid document
// (a pushdown automaton over the schema: one stack of frames per reading;
// readings fork only where a value may be one of several schemas), so Push
// costs O(bytes × live readings × 1).
type Matcher struct {
	schema *Schema
	states []*mstate
	next   []*mstate
	text   []byte // what was pushed, to rebuild the states of the valid prefix after a refusal
	pushed int
	valid  int
	failed bool
	// died is, while a byte is pushed, the longest valid prefix a reading
	// that the byte ended leaves (-1: none ended).
	died   int
	replay bool // rebuilding: text is not recorded
}

// mstate is one reading: the open values, innermost last.
type mstate struct {
	stack []frame
	done  bool // the document is whole; only whitespace may follow
}

type fkind uint8

const (
	fValue   fkind = iota // a value of n is due (whitespace may come first)
	fObject               // inside an object
	fArray                // inside an array
	fString               // inside a string
	fNumber               // inside a number
	fLiteral              // inside true, false or null
)

type phase uint8

const (
	pOpen  phase = iota // after '{' or '['
	pKey                // inside a key
	pColon              // after a key
	pChild              // a member's or item's value is open above
	pAfter              // after a member or item
	pComma              // after ','
)

type frame struct {
	k  fkind
	n  *node
	ph phase
	// objects: the properties seen (a bit each, by index), the other keys
	// seen, how many required ones were seen, the key being read
	seen  []uint64
	extra []string
	nreq  int
	key   []byte
	prop  int // the key's property index, -1 for another key
	// arrays: items so far
	count int
	// strings (and keys): the decoder, code points so far, the place in
	// a constant
	sd    strDec
	runes int
	epos  int
	// numbers: the grammar's state, the text, where the number began
	ns    numState
	num   []byte
	start int
	// literals
	lit  string
	lpos int
}

// NewMatcher starts checking a document from its first byte.
func (s *Schema) NewMatcher() *Matcher {
	return &Matcher{schema: s, states: []*mstate{s.initial()}}
}

func (s *Schema) initial() *mstate {
	return &mstate{stack: []frame{{k: fValue, n: s.root}}}
}

// Push adds text; false at the first byte that can never lead to a valid
// document. Once it returned false, later pushes are ignored.
func (m *Matcher) Push(text string) bool {
	if m.failed {
		return false
	}
	if !m.replay {
		m.text = append(m.text, text...)
	}
	for i := range len(text) {
		c := text[i]
		m.next, m.died = m.next[:0], -1
		for _, st := range m.states {
			m.step(st, c, m.pushed)
		}
		switch {
		case len(m.next) == 0:
			m.fail(max(m.died, 0))
			return false
		case len(m.next) > MaxLiveStates:
			m.fail(m.pushed) // refused at this byte, though it may be valid
			return false
		}
		m.states, m.next = m.next, m.states
		m.pushed++
		m.valid = m.pushed
	}
	return true
}

// fail refuses at the first invalid byte; valid is the longest valid
// prefix. The readings of that prefix are rebuilt (the failed step changed
// them in place) so Forced answers from it.
func (m *Matcher) fail(valid int) {
	m.failed, m.valid = true, min(valid, m.pushed)
	if m.replay {
		return // a rebuild or Forced's trial: nothing to keep
	}
	r := &Matcher{schema: m.schema, states: []*mstate{m.schema.initial()}, replay: true}
	r.Push(string(m.text[:m.valid]))
	m.states, m.next, m.text = r.states, nil, nil
}

// ValidLen is how many bytes of what was pushed are a prefix of some valid
// document: all of them while Push returns true, the kept prefix after a
// false (before a number whose value the schema refused).
func (m *Matcher) ValidLen() int { return m.valid }

// Complete reports that the valid prefix is a whole valid document (only
// whitespace may follow).
func (m *Matcher) Complete() bool {
	for _, st := range m.states {
		if st.done {
			return true
		}
		if len(st.stack) == 1 {
			if f := &st.stack[0]; f.k == fNumber && f.ns.final() && numberAllowed(f.n, parseNumber(string(f.num))) {
				return true
			}
		}
	}
	return false
}

func (m *Matcher) keep(st *mstate) { m.next = append(m.next, st) }

// die ends a reading at a byte; valid is the prefix it leaves.
func (m *Matcher) die(valid int) { m.died = max(m.died, valid) }

// step feeds c, the byte at offset off, to one reading.
func (m *Matcher) step(st *mstate, c byte, off int) {
	for {
		if st.done {
			if isSpace(c) {
				m.keep(st)
			} else {
				m.die(off)
			}
			return
		}
		f := &st.stack[len(st.stack)-1]
		var again bool
		switch f.k {
		case fValue:
			m.startValue(st, c, off)
			return
		case fObject:
			again = m.object(st, f, c, off)
		case fArray:
			again = m.array(st, f, c, off)
		case fString:
			m.str(st, f, c, off)
		case fNumber:
			again = m.number(st, f, c, off)
		case fLiteral:
			if c != f.lit[f.lpos] {
				m.die(off)
				return
			}
			f.lpos++
			if f.lpos == len(f.lit) {
				st.valueDone()
			}
			m.keep(st)
		}
		if !again {
			return
		}
	}
}

// valueDone closes the innermost value.
func (st *mstate) valueDone() {
	st.stack = st.stack[:len(st.stack)-1]
	if len(st.stack) == 0 {
		st.done = true
		return
	}
	p := &st.stack[len(st.stack)-1]
	p.ph = pAfter
	if p.k == fArray {
		p.count++
	}
}

// startValue begins the value due with c: one reading per alternative
// that may begin so.
func (m *Matcher) startValue(st *mstate, c byte, off int) {
	if isSpace(c) {
		m.keep(st)
		return
	}
	f := &st.stack[len(st.stack)-1]
	var starts []frame
	for _, a := range f.n.alternatives() {
		if nf, ok := begin(a, c, off); ok {
			starts = append(starts, nf)
		}
	}
	if len(starts) == 0 {
		m.die(off)
		return
	}
	containers := len(st.stack) // with the new one, if it is a container
	for i, nf := range starts {
		if (nf.k == fObject || nf.k == fArray) && containers > MaxDocumentDepth {
			m.die(off)
			continue
		}
		target := st
		if i < len(starts)-1 {
			target = st.clone()
		}
		target.stack[len(target.stack)-1] = nf
		m.keep(target)
	}
}

// begin is the frame of a value of simple node a that starts with c.
func begin(a *node, c byte, off int) (frame, bool) {
	switch a.kind {
	case kObject:
		return frame{k: fObject, n: a, seen: make([]uint64, (len(a.props)+63)/64)}, c == '{'
	case kArray:
		return frame{k: fArray, n: a}, c == '['
	case kString:
		return frame{k: fString, n: a}, c == '"'
	case kNumber, kInteger:
		ns, ok := numStart.next(c)
		return frame{k: fNumber, n: a, ns: ns, num: []byte{c}, start: off}, ok
	case kBool:
		lit := ""
		switch {
		case c == 't' && (a.exactBool == nil || *a.exactBool):
			lit = "true"
		case c == 'f' && (a.exactBool == nil || !*a.exactBool):
			lit = "false"
		}
		return frame{k: fLiteral, n: a, lit: lit, lpos: 1}, lit != ""
	case kNull:
		return frame{k: fLiteral, n: a, lit: "null", lpos: 1}, c == 'n'
	}
	return frame{}, false
}

func (st *mstate) clone() *mstate {
	out := &mstate{stack: slices.Clone(st.stack), done: st.done}
	for i := range out.stack {
		f := &out.stack[i]
		f.seen, f.extra, f.key, f.num = slices.Clone(f.seen), slices.Clone(f.extra), slices.Clone(f.key), slices.Clone(f.num)
	}
	return out
}

func (f *frame) isSeen(i int) bool { return f.seen[i/64]&(1<<(i%64)) != 0 }

// keyPossible: another member may still follow.
func (f *frame) keyPossible() bool {
	if f.n.additional != nil {
		return true
	}
	for i := range f.n.props {
		if !f.isSeen(i) {
			return true
		}
	}
	return false
}

// keyPrefixPossible: the key read so far begins a key still allowed.
func (f *frame) keyPrefixPossible() bool {
	if f.n.additional != nil {
		return true
	}
	for i, p := range f.n.props {
		if !f.isSeen(i) && len(p.name) >= len(f.key) && p.name[:len(f.key)] == string(f.key) {
			return true
		}
	}
	return false
}

// object feeds c to an object's frame; true to feed c again to the frame
// that is then innermost.
func (m *Matcher) object(st *mstate, f *frame, c byte, off int) bool {
	n := f.n
	switch f.ph {
	case pOpen, pComma, pAfter:
		switch {
		case isSpace(c):
		case c == '}' && f.ph != pComma:
			if f.nreq < n.nRequired {
				m.die(off)
				return false
			}
			st.valueDone()
		case c == '"' && f.ph != pAfter:
			if !f.keyPossible() {
				m.die(off)
				return false
			}
			f.ph, f.key, f.sd = pKey, f.key[:0], strDec{}
		case c == ',' && f.ph == pAfter:
			if !f.keyPossible() {
				m.die(off)
				return false
			}
			f.ph = pComma
		default:
			m.die(off)
			return false
		}
	case pKey:
		r, got, closed, ok := f.sd.push(c)
		switch {
		case !ok:
			m.die(off)
			return false
		case got:
			f.key = utf8.AppendRune(f.key, r)
			if len(f.key) > MaxKeyBytes || !f.keyPrefixPossible() {
				m.die(off)
				return false
			}
		case closed:
			if !m.keyDone(f) {
				m.die(off)
				return false
			}
			f.ph = pColon
		}
	case pColon:
		switch {
		case isSpace(c):
		case c == ':':
			s := n.additional
			if f.prop >= 0 {
				s = n.props[f.prop].schema
			}
			f.ph = pChild
			st.stack = append(st.stack, frame{k: fValue, n: s})
		default:
			m.die(off)
			return false
		}
	}
	m.keep(st)
	return false
}

// keyDone takes the key just read: a property not seen yet, or another key
// where the schema allows them, never one already in the object.
func (m *Matcher) keyDone(f *frame) bool {
	key := string(f.key)
	if i, ok := f.n.propIndex[key]; ok {
		if f.isSeen(i) {
			return false
		}
		f.seen[i/64] |= 1 << (i % 64)
		if f.n.props[i].required {
			f.nreq++
		}
		f.prop = i
		return true
	}
	if f.n.additional == nil || slices.Contains(f.extra, key) {
		return false
	}
	f.extra = append(f.extra, key)
	f.prop = -1
	return true
}

// itemSchema is the schema of an array's item at index i.
func (f *frame) itemSchema(i int) *node {
	if f.n.isTuple {
		return f.n.tuple[i]
	}
	return f.n.items
}

// maxItems is the most items the array may have (-1: no bound).
func (f *frame) maxItems() int {
	if f.n.isTuple {
		return len(f.n.tuple)
	}
	return f.n.maxItems
}

func (f *frame) minItems() int {
	if f.n.isTuple {
		return len(f.n.tuple)
	}
	return f.n.minItems
}

func (m *Matcher) array(st *mstate, f *frame, c byte, off int) bool {
	switch {
	case isSpace(c):
	case c == ']' && f.ph != pComma:
		if f.count < f.minItems() {
			m.die(off)
			return false
		}
		st.valueDone()
	case c == ',' && f.ph == pAfter:
		if mx := f.maxItems(); mx >= 0 && f.count >= mx {
			m.die(off)
			return false
		}
		f.ph = pComma
	case f.ph == pOpen || f.ph == pComma:
		if mx := f.maxItems(); mx >= 0 && f.count >= mx {
			m.die(off)
			return false
		}
		f.ph = pChild
		st.stack = append(st.stack, frame{k: fValue, n: f.itemSchema(f.count)})
		return true // c begins the item
	default:
		m.die(off)
		return false
	}
	m.keep(st)
	return false
}

func (m *Matcher) str(st *mstate, f *frame, c byte, off int) {
	n := f.n
	if n.maxLen >= 0 && f.runes >= n.maxLen && !f.sd.busy() && c != '"' {
		m.die(off) // a character past the longest allowed begins here
		return
	}
	r, got, closed, ok := f.sd.push(c)
	switch {
	case !ok, n.exact != nil && !got && !closed && !f.exactPossible():
		m.die(off)
		return
	case got:
		f.runes++
		if n.maxLen >= 0 && f.runes > n.maxLen {
			m.die(off)
			return
		}
		if n.exact != nil {
			var b [utf8.UTFMax]byte
			enc := b[:utf8.EncodeRune(b[:], r)]
			rest := (*n.exact)[f.epos:]
			if len(rest) < len(enc) || rest[:len(enc)] != string(enc) {
				m.die(off)
				return
			}
			f.epos += len(enc)
		}
	case closed:
		if f.runes < n.minLen || n.exact != nil && f.epos != len(*n.exact) {
			m.die(off)
			return
		}
		st.valueDone()
	}
	m.keep(st)
}

// number feeds c to a number; a byte that cannot continue it ends it, and
// is fed again to the value around it.
func (m *Matcher) number(st *mstate, f *frame, c byte, off int) bool {
	if continuesNumber(c) {
		ns, ok := f.ns.next(c)
		if !ok || f.n.kind == kInteger && (c == '.' || c == 'e' || c == 'E') || len(f.num) >= MaxNumberBytes {
			m.die(off)
			return false
		}
		f.ns, f.num = ns, append(f.num, c)
		m.keep(st)
		return false
	}
	if !f.ns.final() {
		m.die(off)
		return false
	}
	if !numberAllowed(f.n, parseNumber(string(f.num))) {
		m.die(f.start) // out of range: the valid prefix ends before the number
		return false
	}
	st.valueDone()
	return true
}

// exactPossible: the character a constant string is in the middle of (a
// UTF-8 sequence or an escape) can still be the constant's next one.
func (f *frame) exactPossible() bool {
	d := &f.sd
	rest := (*f.n.exact)[f.epos:]
	if rest == "" {
		return false
	}
	if d.u8n > 0 {
		return len(rest) >= int(d.u8n) && rest[:d.u8n] == string(d.u8[:d.u8n])
	}
	want, _ := utf8.DecodeRuneInString(rest)
	hi, lo := want, rune(-1)
	if want >= 0x10000 {
		hi, lo = 0xD800+(want-0x10000)>>10, 0xDC00+(want-0x10000)&0x3FF
	}
	switch {
	case d.esc == escBackslash || d.esc == escU0:
		return true
	case d.esc <= escU3:
		return d.acc == hi>>(4*(4-int(d.esc-escU0)))
	case lo < 0 || d.hi != hi:
		return false
	case d.esc == escLowBackslash || d.esc == escLowU || d.esc == escLow0:
		return true
	}
	return d.acc == lo>>(4*(4-int(d.esc-escLow0)))
}
