package jsonschema

import "unicode/utf8"

// strDec decodes a JSON string's body a byte at a time, refusing at the
// first byte that no valid string can have there: a raw control
// character, a bad escape, a lone surrogate, a byte that is not UTF-8.
type strDec struct {
	esc uint8 // one of the esc states
	acc rune  // hex digits read so far
	hi  rune  // a high surrogate waiting for its low half
	u8  [4]byte
	u8n uint8
}

const (
	escNone      uint8 = iota
	escBackslash       // after '\'
	escU0              // \u, then escU1 … escU3 after each hex digit
	escU1
	escU2
	escU3
	escLowBackslash // a high surrogate read: '\' must follow
	escLowU         // then 'u'
	escLow0         // then DC00…DFFF, a hex digit at a time
	escLow1
	escLow2
	escLow3
)

// busy: inside an escape or a multi-byte character.
func (d *strDec) busy() bool { return d.esc != escNone || d.u8n > 0 }

// push takes one byte: the code point it completes (got), whether it
// closed the string, and false when it can never be valid.
func (d *strDec) push(c byte) (r rune, got, closed, ok bool) {
	if d.u8n > 0 {
		d.u8[d.u8n] = c
		d.u8n++
		if !utf8Prefix(d.u8[:d.u8n]) {
			return 0, false, false, false
		}
		if !utf8.FullRune(d.u8[:d.u8n]) {
			return 0, false, false, true
		}
		r, _ = utf8.DecodeRune(d.u8[:d.u8n])
		d.u8n = 0
		return r, true, false, true
	}
	switch d.esc {
	case escNone:
		switch {
		case c == '"':
			return 0, false, true, true
		case c == '\\':
			d.esc = escBackslash
			return 0, false, false, true
		case c < 0x20:
			return 0, false, false, false
		case c < utf8.RuneSelf:
			return rune(c), true, false, true
		}
		d.u8[0], d.u8n = c, 1
		return 0, false, false, utf8Prefix(d.u8[:1])
	case escBackslash:
		if r, ok := simpleEscape(c); ok {
			d.esc = escNone
			return r, true, false, true
		}
		if c != 'u' {
			return 0, false, false, false
		}
		d.esc, d.acc = escU0, 0
		return 0, false, false, true
	case escLowBackslash:
		d.esc = escLowU
		return 0, false, false, c == '\\'
	case escLowU:
		d.esc, d.acc = escLow0, 0
		return 0, false, false, c == 'u'
	}
	h, isHex := hexDigit(c)
	if !isHex {
		return 0, false, false, false
	}
	d.acc = d.acc<<4 | h
	switch d.esc {
	case escU1:
		if d.acc >= 0xDC && d.acc <= 0xDF { // a low surrogate with no high one before it
			return 0, false, false, false
		}
	case escU3:
		if d.acc >= 0xD800 && d.acc <= 0xDBFF {
			d.hi, d.esc = d.acc, escLowBackslash
			return 0, false, false, true
		}
		d.esc = escNone
		return d.acc, true, false, true
	case escLow0:
		if d.acc != 0xD {
			return 0, false, false, false
		}
	case escLow1:
		if d.acc < 0xDC || d.acc > 0xDF {
			return 0, false, false, false
		}
	case escLow3:
		d.esc = escNone
		return 0x10000 + (d.hi-0xD800)<<10 + (d.acc - 0xDC00), true, false, true
	}
	d.esc++
	return 0, false, false, true
}

// utf8Prefix: b can begin a valid UTF-8 encoding of one code point.
func utf8Prefix(b []byte) bool {
	c0 := b[0]
	var lo2, hi2 byte = 0x80, 0xBF
	switch {
	case c0 >= 0xC2 && c0 <= 0xDF, c0 >= 0xE1 && c0 <= 0xEC, c0 == 0xEE, c0 == 0xEF, c0 >= 0xF1 && c0 <= 0xF3:
	case c0 == 0xE0:
		lo2 = 0xA0
	case c0 == 0xED:
		hi2 = 0x9F
	case c0 == 0xF0:
		lo2 = 0x90
	case c0 == 0xF4:
		hi2 = 0x8F
	default:
		return false
	}
	for i, c := range b[1:] {
		lo, hi := byte(0x80), byte(0xBF)
		if i == 0 {
			lo, hi = lo2, hi2
		}
		if c < lo || c > hi {
			return false
		}
	}
	return true
}
