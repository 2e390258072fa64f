package jsonschema

import (
	"strings"
	"unicode/utf8"
)

// maxForced bounds what one Forced call returns.
const maxForced = 64 << 10

// Forced is what the schema fixes next after the valid prefix, written the
// way Generate writes (`{"a": 1, "b": `): what a constrained decoder
// inserts instead of generating it. It is "" where the model has a choice
// (a string's next character, a number's next digit, which optional
// property comes next), and never more than the schema determines: a
// constant's whole value, the punctuation and the key of the one property
// that may come next, the end of an object or array that can take no more.
// Where only required properties are left, Forced names the first of them
// in the schema's order (the model must write each of them anyway; any
// order is accepted). A number at the end of the valid prefix may go on
// (Forced is ""), unless Push refused the byte after it: then the model
// ended it, and Forced is what follows it.
func (m *Matcher) Forced() string {
	states := make([]*mstate, len(m.states))
	for i, st := range m.states {
		states[i] = st.clone()
		// After a refusal, a number the valid prefix ends in was ended by
		// the model (it wrote what cannot continue a number): what the
		// schema fixes is what follows it. Before one, the number may
		// still go on, which is the model's choice.
		if !m.failed || states[i].done {
			continue
		}
		if f := &states[i].stack[len(states[i].stack)-1]; f.k == fNumber && f.ns.final() && numberAllowed(f.n, parseNumber(string(f.num))) {
			states[i].valueDone()
		}
	}
	sim := &Matcher{schema: m.schema, states: states, replay: true}
	var out strings.Builder
	for out.Len() < maxForced {
		tok := ""
		for i, st := range sim.states {
			t := st.forcedToken()
			if i == 0 {
				tok = t
			} else {
				tok = commonPrefix(tok, t)
			}
			if tok == "" {
				break
			}
		}
		if tok == "" || !sim.Push(tok) {
			break
		}
		out.WriteString(tok)
	}
	return out.String()
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	// Never half a character.
	for n > 0 && (n < len(a) && !utf8.RuneStart(a[n]) || n < len(b) && !utf8.RuneStart(b[n])) {
		n--
	}
	return a[:n]
}

// forcedToken is the next piece the schema fixes for this reading, "" for
// a choice.
func (st *mstate) forcedToken() string {
	if st.done {
		return ""
	}
	f := &st.stack[len(st.stack)-1]
	switch f.k {
	case fValue:
		return startToken(f.n)
	case fObject:
		return f.objectToken()
	case fArray:
		switch f.ph {
		case pOpen, pComma:
			if mx := f.maxItems(); f.ph == pOpen && mx >= 0 && f.count >= mx {
				return "]"
			}
			if f.ph == pComma || f.count < f.minItems() {
				return startToken(f.itemSchema(f.count))
			}
		case pAfter:
			if f.count < f.minItems() {
				return ", "
			}
			if mx := f.maxItems(); mx >= 0 && f.count >= mx {
				return "]"
			}
		}
	case fString:
		switch {
		case f.sd.busy():
		case f.n.exact != nil:
			return escape((*f.n.exact)[f.epos:]) + `"`
		case f.n.maxLen >= 0 && f.runes >= f.n.maxLen:
			return `"`
		}
	case fLiteral:
		return f.lit[f.lpos:]
	case fNumber:
		// A constant number written whole: what follows it is fixed as
		// if it had ended.
		if f.n.exactNum != nil && string(f.num) == f.n.exactNum.str && len(st.stack) > 1 {
			parent := st.stack[len(st.stack)-2]
			parent.ph = pAfter
			if parent.k == fArray {
				parent.count++
			}
			after := &mstate{stack: []frame{parent}}
			return after.forcedToken()
		}
	}
	return ""
}

// startToken is how every value of n begins, "" when they differ.
func startToken(n *node) string {
	tok := ""
	for i, a := range n.alternatives() {
		t := ""
		switch a.kind {
		case kObject:
			t = "{"
		case kArray:
			t = "["
		case kString:
			t = `"`
		case kNull:
			t = "null"
		case kBool:
			if a.exactBool != nil {
				t = map[bool]string{true: "true", false: "false"}[*a.exactBool]
			}
		case kNumber, kInteger:
			if a.exactNum != nil {
				t = a.exactNum.str
			}
		}
		if i == 0 {
			tok = t
		} else {
			tok = commonPrefix(tok, t)
		}
		if tok == "" {
			return ""
		}
	}
	return tok
}

func (f *frame) objectToken() string {
	n := f.n
	reqLeft := f.nreq < n.nRequired
	switch f.ph {
	case pOpen, pComma:
		if f.ph == pOpen && !reqLeft {
			if !f.keyPossible() {
				return "}"
			}
			return ""
		}
		if n.additional != nil {
			return `"`
		}
		var unseen []int
		onlyRequired := true
		for i, p := range n.props {
			if !f.isSeen(i) {
				unseen = append(unseen, i)
				onlyRequired = onlyRequired && p.required
			}
		}
		switch {
		case len(unseen) == 1 || len(unseen) > 0 && reqLeft && onlyRequired:
			return `"` + escape(n.props[unseen[0]].name) + `": `
		case len(unseen) > 0:
			return `"`
		}
	case pKey:
		if n.additional != nil || f.sd.busy() {
			return ""
		}
		rest, candidates := "", 0
		for i, p := range n.props {
			if !f.isSeen(i) && strings.HasPrefix(p.name, string(f.key)) {
				r := p.name[len(f.key):]
				if candidates == 0 {
					rest = r
				} else {
					rest = commonPrefix(rest, r)
				}
				candidates++
			}
		}
		if candidates == 1 {
			return escape(rest) + `": `
		}
		return escape(rest)
	case pColon:
		return ": "
	case pAfter:
		if reqLeft {
			return ", "
		}
		if !f.keyPossible() {
			return "}"
		}
	}
	return ""
}
