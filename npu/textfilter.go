package npu

import (
	"strings"
	"unicode/utf8"
)

// utf8Assembler turns arbitrary byte chunks into valid UTF-8. A code point
// split across chunks is held back until its last byte arrives; bytes that
// can never form a code point become U+FFFD.
type utf8Assembler struct {
	carry []byte // an incomplete code point from the previous chunk, at most 3 bytes
	buf   []byte
}

// push returns the valid UTF-8 text that chunk completes.
func (a *utf8Assembler) push(chunk string) string {
	if len(a.carry) == 0 && utf8.ValidString(chunk) {
		return chunk // fast path: the common case allocates nothing
	}
	a.buf = append(append(a.buf[:0], a.carry...), chunk...)
	a.carry = a.carry[:0]
	cut := incompleteTail(a.buf)
	a.carry = append(a.carry, a.buf[cut:]...)
	return replaceInvalid(a.buf[:cut])
}

// replaceInvalid returns b with each maximal ill-formed subpart (a byte that
// cannot start a code point, or the valid start of one cut short) replaced
// by one U+FFFD, as Unicode recommends. Unlike strings.ToValidUTF8, which
// merges a run of bad bytes into one U+FFFD, the result does not depend on
// where the engine split its output into chunks.
func replaceInvalid(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			for size < len(b) && !utf8.FullRune(b[:size+1]) {
				size++ // still a valid, incomplete start of a code point
			}
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return string(out)
}

// flush returns what is still held back; an incomplete code point at the
// very end of a generation cannot be completed and becomes U+FFFD.
func (a *utf8Assembler) flush() string {
	if len(a.carry) == 0 {
		return ""
	}
	a.carry = a.carry[:0]
	return "\uFFFD"
}

// incompleteTail returns the index where a trailing, still incomplete (but so
// far valid) UTF-8 sequence starts, or len(b) when there is none.
func incompleteTail(b []byte) int {
	// A sequence is at most 4 bytes, so only the last 3 can start one.
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c < utf8.RuneSelf {
			return len(b) // ASCII: nothing pending
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// stopMatcher finds stop strings in a stream of text. It holds back any
// suffix that could still become a stop string, so no prefix of a stop
// string is ever released.
type stopMatcher struct {
	stops []string
	held  string
	// matched is the stop string that ended the output, once one did.
	matched string
}

// push returns the text that can be released and whether a stop string was
// found; after a match the text from the stop string on is discarded.
//
// The stop string that is complete first wins (the longest of those ending
// at the same byte), as when the engine produces one character at a time,
// so the cut does not depend on how the text was split into chunks.
func (m *stopMatcher) push(text string) (release string, stopped bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.held + text
	first, end := -1, 0
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 {
			if e := i + len(s); first < 0 || e < end || (e == end && i < first) {
				first, end = i, e
			}
		}
	}
	if first >= 0 {
		m.held, m.matched = "", buf[first:end]
		return buf[:first], true
	}
	keep := m.partialSuffix(buf)
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush releases the held-back text once the generation has ended.
func (m *stopMatcher) flush() string {
	h := m.held
	m.held = ""
	return h
}

// partialSuffix returns the length of the longest suffix of buf that is a
// proper prefix of some stop string.
func (m *stopMatcher) partialSuffix(buf string) int {
	best := 0
	for _, s := range m.stops {
		n := min(len(s)-1, len(buf))
		for k := n; k > best; k-- {
			if strings.HasPrefix(s, buf[len(buf)-k:]) {
				best = k
				break
			}
		}
	}
	return best
}
