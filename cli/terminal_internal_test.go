package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct {
		in, multiline, oneLine string
	}{
		{"plain text", "plain text", "plain text"},
		{"a\n\tb", "a\n\tb", "a  b"},
		{"x\x1b[31mred\x1b[0m", "xred", "xred"},
		{"\x1b]0;title\x07after", "after", "after"},
		{"\x1b]52;c;Y2xpcA==\x1b\\after", "after", "after"},
		{"\u009b2Jafter", "after", "after"},
		{"\u009d0;t\u009cafter", "after", "after"},
		{"bell\a cr\r del\x7f", "bell cr del", "bell cr del"},
		{"\x1bcreset", "reset", "reset"},
		{"cut\x1b[", "cut", "cut"},
		{"ünïcödé ✓", "ünïcödé ✓", "ünïcödé ✓"},
	} {
		assert.Equal(t, tc.multiline, terminalSafe(tc.in, true), "%q", tc.in)
		assert.Equal(t, tc.oneLine, terminalSafe(tc.in, false), "%q", tc.in)
	}
}
