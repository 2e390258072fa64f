package openaiwire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"plain", "plain text"},
		{"quote and backslash", `quote " and \ backslash \\ ""`},
		{"short escapes", "new\nline\ttab\rcr\b backspace \f formfeed"},
		{"other control characters", "\x00\x01\x07\x0b\x0e\x1b\x1f"},
		{"HTML characters", "<script>&amp;</script> a<b>c&d"},
		{"line and paragraph separators", "line\u2028sep\u2029para\u2028"},
		{"DEL is not escaped", "\u007f del"},
		{"two-byte", "café naïve Zürich niño"},
		{"three-byte", "日本語 データ"},
		{"emoji", "🙂🚀 and 👩‍👩‍👧 with a joiner"},
		{"escape at start and end", "\"middle\""},
		{"only escapes", "\n\n\"\"<<"},
		{"near separators", "\u2027\u202a\u2030"},
		{"long", strings.Repeat("token \"x\" ", 200)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.in)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(AppendJSONString(nil, tc.in)))
			// Appending keeps what dst held.
			assert.Equal(t, "prefix:"+string(want), string(AppendJSONString([]byte("prefix:"), tc.in)))
		})
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"hello \"world\"\n", "🙂<>&\u2028", "\x00\x1f\\", "日本語\u2029", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip() // the bridge only ever hands over valid UTF-8
		}
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendJSONString(nil, s)))
	})
}
