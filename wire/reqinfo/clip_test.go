package reqinfo

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{"short", "Llama-3.2-1B", false},
		{"at the bound", strings.Repeat("a", maxLogString), false},
		{"long", strings.Repeat("a", 10_000), true},
		{"long and multi-byte", strings.Repeat("日本", 1_000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Clip(tc.in)
			assert.True(t, utf8.ValidString(out), "cut on a rune boundary")
			if !tc.cut {
				assert.Equal(t, tc.in, out)
				return
			}
			assert.Less(t, len(out), maxLogString+40)
			assert.Contains(t, out, "bytes more")
		})
	}
}
