package npu

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runFilters feeds chunks through the UTF-8 assembler and the stop matcher
// as the bridge does, and returns every released piece and whether a stop
// string matched.
func runFilters(chunks []string, stops []string) (pieces []string, stopped bool) {
	var a utf8Assembler
	m := stopMatcher{stops: stops}
	for _, c := range chunks {
		rel, hit := m.push(a.push(c))
		if rel != "" {
			pieces = append(pieces, rel)
		}
		if hit {
			return pieces, true
		}
	}
	rel, hit := m.push(a.flush())
	if rel != "" {
		pieces = append(pieces, rel)
	}
	if hit {
		return pieces, true
	}
	if tail := m.flush(); tail != "" {
		pieces = append(pieces, tail)
	}
	return pieces, false
}

// splitAt cuts s at the given byte offsets.
func splitAt(s string, cuts ...int) []string {
	var out []string
	prev := 0
	for _, c := range cuts {
		out = append(out, s[prev:c])
		prev = c
	}
	return append(out, s[prev:])
}

func TestUTF8AssemblerHoldsSplitCodePoints(t *testing.T) {
	for _, r := range []string{"é", "日", "🙂"} {
		text := "a" + r + "b"
		for cut := 1; cut < len(text); cut++ {
			pieces, _ := runFilters(splitAt(text, cut), nil)
			for _, p := range pieces {
				assert.True(t, utf8.ValidString(p), "%q cut at %d released %q", text, cut, p)
			}
			assert.Equal(t, text, strings.Join(pieces, ""), "%q cut at %d", text, cut)
		}
		// One byte per callback.
		var bytesOneByOne []string
		for i := range len(text) {
			bytesOneByOne = append(bytesOneByOne, text[i:i+1])
		}
		pieces, _ := runFilters(bytesOneByOne, nil)
		assert.Equal(t, text, strings.Join(pieces, ""))
	}
}

func TestUTF8AssemblerInvalidBytes(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"invalid byte in the middle", []string{"a\xffb"}, "a\uFFFDb"},
		{"stray continuation byte", []string{"a", "\x80", "b"}, "a\uFFFDb"},
		{"incomplete at the end", []string{"ok\xf0\x9f"}, "ok\uFFFD"},
		{"lead byte then ASCII", []string{"\xe6", "x"}, "\uFFFDx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pieces, _ := runFilters(tc.chunks, nil)
			got := strings.Join(pieces, "")
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name     string
		chunks   []string
		stops    []string
		want     string
		wantStop bool
	}{
		{"no stops", []string{"ab", "cd"}, nil, "abcd", false},
		{"inside one chunk", []string{"hello STOP there"}, []string{"STOP"}, "hello ", true},
		{"across two chunks", []string{"hello ST", "OP there"}, []string{"STOP"}, "hello ", true},
		{"across three chunks", []string{"hello S", "T", "OP"}, []string{"STOP"}, "hello ", true},
		{"at the start", []string{"STOP", "more"}, []string{"STOP"}, "", true},
		{"prefix never completes", []string{"hello ST", "ar"}, []string{"STOP"}, "hello STar", false},
		{"prefix at the very end", []string{"hello ST"}, []string{"STOP"}, "hello ST", false},
		{"earliest of several wins", []string{"one two three"}, []string{"three", "two"}, "one ", true},
		{"multi-byte stop split inside a character", []string{"x日", "\xe6", "\x9c\xac"}, []string{"日本"}, "x", true},
		{"overlapping prefixes", []string{"aaab"}, []string{"aab"}, "a", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pieces, stopped := runFilters(tc.chunks, tc.stops)
			assert.Equal(t, tc.want, strings.Join(pieces, ""))
			assert.Equal(t, tc.wantStop, stopped)
		})
	}
}

// TestStopMatcherNeverReleasesAPrefix checks what a client sees before the
// end: no released piece may leave the output ending in a stop-string prefix
// while the stream goes on.
func TestStopMatcherNeverReleasesAPrefix(t *testing.T) {
	m := stopMatcher{stops: []string{"</s>"}}
	var out string
	for _, c := range []string{"text <", "/", "s", ">", " never"} {
		rel, stopped := m.push(c)
		out += rel
		if stopped {
			break
		}
		for k := 1; k < len("</s>"); k++ {
			assert.False(t, strings.HasSuffix(out, "</s>"[:k]), "released %q ends with a prefix of the stop string", out)
		}
	}
	assert.Equal(t, "text ", out)
}

// FuzzStreamFilters splits text at random places and checks the filters
// give what a whole-string reference gives.
func FuzzStreamFilters(f *testing.F) {
	f.Add("hello world STOP more", "STOP", uint64(0x1234))
	f.Add("日本語のテキスト🙂 and more", "テキ", uint64(77))
	f.Add("a\xffb\xf0\x9f\x99", "zz", uint64(5))
	f.Add("aaaaab", "aab", uint64(99))
	f.Fuzz(func(t *testing.T, text, stop string, cuts uint64) {
		if stop == "" || !utf8.ValidString(stop) {
			t.Skip()
		}
		var chunks []string
		for rest := text; rest != ""; {
			n := int(cuts%5) + 1
			cuts = cuts/5 + 1
			n = min(n, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		pieces, stopped := runFilters(chunks, []string{stop})
		got := strings.Join(pieces, "")
		require.True(t, utf8.ValidString(got))

		// Reference: repair the whole text, then cut at the first stop.
		// Repairing chunk by chunk may join bytes differently only when the
		// text is invalid, so compare exactly for valid input.
		if utf8.ValidString(text) {
			want, wantStop := text, false
			if i := strings.Index(text, stop); i >= 0 {
				want, wantStop = text[:i], true
			}
			require.Equal(t, want, got)
			require.Equal(t, wantStop, stopped)
		} else {
			require.NotContains(t, got, stop)
		}
	})
}
