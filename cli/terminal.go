package cli

import "strings"

// terminalSafe is s as it may reach a terminal: what the network sent (model
// text, model names, pull status, error messages) must not drive the
// user's terminal. Escape sequences (CSI, OSC such as title changes and
// OSC 52 clipboard writes, DCS and the other string controls, in their
// 7-bit and 8-bit forms) are removed whole, and the other control
// characters dropped; model text (multiline) keeps its newlines and tabs,
// a one-line value (a name in a table, a status) shows them as spaces.
func terminalSafe(s string, multiline bool) string {
	clean := true
	for _, r := range s {
		if isControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\n' || r == '\t':
			if multiline {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == 0x1b: // ESC: a sequence follows
			if i+1 >= len(rs) {
				continue
			}
			i++
			switch rs[i] {
			case '[':
				i = skipCSI(rs, i+1)
			case ']', 'P', '_', '^', 'X':
				i = skipString(rs, i+1)
			}
			// Any other ESC x is two characters, both dropped.
		case r == 0x9b: // CSI, 8-bit
			i = skipCSI(rs, i+1)
		case r == 0x9d || r == 0x90 || r == 0x9f || r == 0x9e || r == 0x98: // OSC, DCS, APC, PM, SOS, 8-bit
			i = skipString(rs, i+1)
		case isControl(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl: C0 controls, DEL and C1 controls.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// skipCSI returns the index of a control sequence's final byte (0x40 to
// 0x7e), the parameters starting at i; the last index if it never ends.
func skipCSI(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		if rs[i] >= 0x40 && rs[i] <= 0x7e {
			return i
		}
	}
	return len(rs) - 1
}

// skipString returns the index of the end of a control string (OSC, DCS…)
// starting at i: BEL, ST (0x9c) or ESC \.
func skipString(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		switch {
		case rs[i] == 0x07 || rs[i] == 0x9c:
			return i
		case rs[i] == 0x1b && i+1 < len(rs) && rs[i+1] == '\\':
			return i + 1
		}
	}
	return len(rs) - 1
}
