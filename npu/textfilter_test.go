package npu

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wellFormedUTF8 is Table 3-7 of the Unicode Standard: every well-formed
// UTF-8 byte sequence, as the range each of its bytes may take. The test
// reference below is built on it rather than on unicode/utf8, so it checks
// the assembler against the standard, not against the library it uses.
var wellFormedUTF8 = [][][2]byte{
	{{0x00, 0x7F}},
	{{0xC2, 0xDF}, {0x80, 0xBF}},
	{{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
	{{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
	{{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
}

// referenceRepair replaces each maximal ill-formed subpart of s (a byte
// that cannot start a sequence, or the valid beginning of a sequence that
// is cut short) with one U+FFFD, the Unicode Standard's recommended
// practice (§3.9, "U+FFFD Substitution of Maximal Subparts").
func referenceRepair(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		matched, full := 0, false
		for _, row := range wellFormedUTF8 {
			n := 0
			for n < len(row) && i+n < len(s) && row[n][0] <= s[i+n] && s[i+n] <= row[n][1] {
				n++
			}
			if n > matched {
				matched, full = n, n == len(row)
			}
		}
		if full {
			b.WriteString(s[i : i+matched])
			i += matched
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += max(matched, 1)
	}
	return b.String()
}

// referenceStop cuts text where generation ends when it is produced one
// byte at a time: at the first place any stop string is complete, before
// that stop string (the longest one when several end there).
func referenceStop(text string, stops []string) (string, bool) {
	for end := 1; end <= len(text); end++ {
		cut := -1
		for _, s := range stops {
			if strings.HasSuffix(text[:end], s) && (cut < 0 || end-len(s) < cut) {
				cut = end - len(s)
			}
		}
		if cut >= 0 {
			return text[:cut], true
		}
	}
	return text, false
}

func TestReferenceRepair(t *testing.T) {
	// The reference itself, against the examples of Unicode §3.9 and
	// against the Go decoder on valid text.
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"é日🙂", "é日🙂"},
		// Table 3-8 of the standard, its example of maximal subparts.
		{"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd"},
		{"\xC0\xAF", "\uFFFD\uFFFD"},                     // overlong lead bytes never start a sequence
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"},           // a surrogate is not a valid prefix past ED
		{"\xF4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // beyond U+10FFFF
		{"\xff\xfe", "\uFFFD\uFFFD"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, referenceRepair(tc.in), "%q", tc.in)
	}
}

// filterRun is one stream through the UTF-8 assembler and the stop matcher,
// fed as the bridge feeds them.
type filterRun struct {
	a         utf8Assembler
	m         stopMatcher
	assembled strings.Builder // everything the assembler released
	out       strings.Builder // everything the matcher released
	pieces    []string        // the same, piece by piece
	stopped   bool
}

func (r *filterRun) release(piece string) {
	if piece != "" {
		r.pieces = append(r.pieces, piece)
		r.out.WriteString(piece)
	}
}

func newFilterRun(stops ...string) *filterRun { return &filterRun{m: stopMatcher{stops: stops}} }

// push feeds one chunk and returns what was released for it.
func (r *filterRun) push(chunk string) string {
	text := r.a.push(chunk)
	r.assembled.WriteString(text)
	rel, hit := r.m.push(text)
	r.release(rel)
	r.stopped = hit
	return rel
}

// end flushes both filters as the bridge does when the engine returns.
func (r *filterRun) end() {
	tail := r.a.flush()
	r.assembled.WriteString(tail)
	rel, hit := r.m.push(tail)
	r.release(rel)
	if r.stopped = hit; !hit {
		r.release(r.m.flush())
	}
}

func (r *filterRun) output() string { return r.out.String() }

// runFilters feeds chunks until a stop string matches or they run out.
func runFilters(chunks []string, stops ...string) *filterRun {
	r := newFilterRun(stops...)
	for _, c := range chunks {
		if r.push(c); r.stopped {
			return r
		}
	}
	r.end()
	return r
}

// splitAt cuts s at the given byte offsets, in increasing order.
func splitAt(s string, cuts ...int) []string {
	var out []string
	prev := 0
	for _, c := range cuts {
		out = append(out, s[prev:c])
		prev = c
	}
	return append(out, s[prev:])
}

func TestUTF8AssemblerSplitCodePoints(t *testing.T) {
	for _, r := range []string{"é", "ß", "日", "€", "🙂", "𝄞"} {
		text := "a" + r + "b" + r
		t.Run(r, func(t *testing.T) {
			// Every single cut and every pair of cuts, so a 4-byte rune is
			// also seen in three pieces.
			for i := 0; i <= len(text); i++ {
				for j := i; j <= len(text); j++ {
					run := runFilters(splitAt(text, i, j))
					for _, p := range run.pieces {
						require.True(t, utf8.ValidString(p), "cuts %d,%d released %q", i, j, p)
					}
					require.Equal(t, text, run.output(), "cuts %d,%d", i, j)
				}
			}
		})
	}
}

func TestUTF8AssemblerHoldsOnlyTheIncompleteTail(t *testing.T) {
	var a utf8Assembler
	assert.Equal(t, "ab", a.push("ab\xf0\x9f"), "the valid text before a split rune is released at once")
	assert.Equal(t, "", a.push("\x99"), "still incomplete")
	assert.Equal(t, "🙂c", a.push("\x82c"))
	assert.Equal(t, "", a.flush(), "nothing held back")

	assert.Equal(t, "", a.push("\xe6"))
	assert.Equal(t, "", a.push(""), "an empty chunk changes nothing")
	assert.Equal(t, "日", a.push("\x97\xa5"))
}

func TestUTF8AssemblerInvalidBytes(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"invalid byte in the middle", []string{"a\xffb"}, "a\uFFFDb"},
		{"stray continuation byte", []string{"a", "\x80", "b"}, "a\uFFFDb"},
		{"incomplete tail at flush", []string{"ok\xf0\x9f"}, "ok\uFFFD"},
		{"incomplete tail split over chunks at flush", []string{"ok\xf0", "\x9f\x99"}, "ok\uFFFD"},
		{"lead byte then ASCII", []string{"\xe6", "x"}, "\uFFFDx"},
		{"truncated sequence then ASCII", []string{"\xe6\x97", "x"}, "\uFFFDx"},
		{"lead byte then another rune", []string{"\xe6", "\xe6\x97\xa5"}, "\uFFFD日"},
		{"two bad bytes in one chunk", []string{"a\xff\xfeb"}, "a\uFFFD\uFFFDb"},
		{"two bad bytes in two chunks", []string{"a\xff", "\xfeb"}, "a\uFFFD\uFFFDb"},
		{"bad byte then a truncated sequence", []string{"\xff\xe6", "x"}, "\uFFFD\uFFFDx"},
		{"surrogate", []string{"\xed\xa0\x80"}, "\uFFFD\uFFFD\uFFFD"},
		{"overlong", []string{"\xc0\xaf"}, "\uFFFD\uFFFD"},
		{"literal U+FFFD is kept", []string{"\uFFFD", "\xff"}, "\uFFFD\uFFFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := runFilters(tc.chunks)
			for _, p := range run.pieces {
				assert.True(t, utf8.ValidString(p), "released %q", p)
			}
			assert.Equal(t, tc.want, run.output())
			assert.Equal(t, referenceRepair(strings.Join(tc.chunks, "")), run.output(),
				"the same as repairing the whole text at once")
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
		{"one byte per chunk", strings.Split("ab</s>cd", ""), []string{"</s>"}, "ab", true},
		{"at the start of a chunk", []string{"abc", "STOP", "more"}, []string{"STOP"}, "abc", true},
		{"at the end of a chunk", []string{"abcSTOP", "more"}, []string{"STOP"}, "abc", true},
		{"the whole output", []string{"STOP"}, []string{"STOP"}, "", true},
		{"prefix that never completes", []string{"hello ST", "ar"}, []string{"STOP"}, "hello STar", false},
		{"prefix at the very end is released at flush", []string{"hello ST"}, []string{"STOP"}, "hello ST", false},
		{"earliest of several wins", []string{"one two three"}, []string{"three", "two"}, "one ", true},
		{"earliest of several across chunks", []string{"one thr", "ee two"}, []string{"two", "three"}, "one ", true},
		{"longest of those ending together", []string{"x\n\nUser:"}, []string{"User:", "\n\nUser:"}, "x", true},
		{"a stop that completes first wins", []string{"x\n\nUser"}, []string{"\n\nUser:", "User"}, "x\n\n", true},
		{"a stop that completes first wins whatever the chunks", []string{"x\n\nUs", "er: hi"}, []string{"\n\nUser:", "User"}, "x\n\n", true},
		{"multi-byte stop string", []string{"価格は日本円"}, []string{"日本"}, "価格は", true},
		{"multi-byte stop split inside a character", []string{"x日", "\xe6", "\x9c\xac"}, []string{"日本"}, "x", true},
		{"multi-byte prefix released at flush", []string{"x日"}, []string{"日本"}, "x日", false},
		{"self-overlapping stop", []string{"aa", "ab"}, []string{"aab"}, "a", true},
		{"stop made of U+FFFD matches repaired bytes", []string{"a\xff", "b"}, []string{"\uFFFDb"}, "a", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := runFilters(tc.chunks, tc.stops...)
			assert.Equal(t, tc.want, run.output())
			assert.Equal(t, tc.wantStop, run.stopped)
			want, wantStop := referenceStop(referenceRepair(strings.Join(tc.chunks, "")), tc.stops)
			assert.Equal(t, want, run.output(), "the same as matching the whole text")
			assert.Equal(t, wantStop, run.stopped)
		})
	}
}

// TestStopMatcherHoldsBackEveryPossibleStart checks what a client sees
// while the stream goes on: nothing that could still be the start of a stop
// string is released, and nothing else is held back.
func TestStopMatcherHoldsBackEveryPossibleStart(t *testing.T) {
	tests := []struct {
		chunk    string
		released string
	}{
		{"text <", "text "},
		{"/", ""},
		{"s", ""},
		{"x", "</sx"}, // "</sx" can no longer become "</s>"
		{"<<", "<"},   // only the last "<" may start a stop string
		{"/s", ""},
		{">", ""}, // the stop string completes
	}
	m := stopMatcher{stops: []string{"</s>"}}
	for i, step := range tests {
		rel, stopped := m.push(step.chunk)
		assert.Equal(t, step.released, rel, "step %d (%q)", i, step.chunk)
		assert.Equal(t, i == len(tests)-1, stopped, "step %d", i)
	}
}

// FuzzStreamFilters splits text into random chunks, runs them through the
// UTF-8 assembler and the stop matcher as the bridge does, and checks the
// result against a reference computed on the whole text at once.
func FuzzStreamFilters(f *testing.F) {
	f.Add("hello world STOP more", "STOP", "", uint64(1))
	f.Add("日本語のテキスト🙂 and more", "テキ", "🙂", uint64(77))
	f.Add("a\xffb\xf0\x9f\x99 \xe6\x97 c\xed\xa0\x80", "zz", "c", uint64(5))
	f.Add("aaaaab", "aab", "ab", uint64(99))
	f.Add("x\n\nUser: hi", "\n\nUser:", "User", uint64(3))
	f.Add("ends with a partial </s", "</s>", "", uint64(12))
	f.Fuzz(func(t *testing.T, text, stop1, stop2 string, seed uint64) {
		// Long inputs find nothing short ones do not, and the checks below
		// are quadratic in the stop strings' length.
		text = text[:min(len(text), 4096)]
		stop1, stop2 = stop1[:min(len(stop1), 64)], stop2[:min(len(stop2), 64)]
		var stops []string
		for _, s := range []string{stop1, stop2} {
			// The API layers refuse empty stop strings; JSON carries only
			// valid UTF-8.
			if s != "" && utf8.ValidString(s) {
				stops = append(stops, s)
			}
		}
		maxStop := 0
		for _, s := range stops {
			maxStop = max(maxStop, len(s))
		}
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		run := newFilterRun(stops...)
		for rest := text; rest != "" && !run.stopped; {
			n := min(rng.IntN(7), len(rest)) // empty chunks too: engines send them
			rel := run.push(rest[:n])
			rest = rest[n:]
			require.True(t, utf8.ValidString(rel), "released invalid UTF-8 %q", rel)
			if run.stopped {
				break
			}
			// While the stream goes on, the released text is the assembled
			// text minus a held-back tail that could still start a stop
			// string, and no released byte could.
			assembled := run.assembled.String()
			out := run.output()
			require.True(t, strings.HasPrefix(assembled, out))
			held := assembled[len(out):]
			if held != "" {
				require.True(t, isProperPrefixOfAny(held, stops), "held back %q, which starts no stop string", held)
			}
			for p := max(0, len(assembled)-maxStop+1); p < len(out); p++ {
				require.False(t, isProperPrefixOfAny(assembled[p:], stops),
					"released %q although %q could still become a stop string", out, assembled[p:])
			}
		}
		if !run.stopped {
			run.end()
		}
		got := run.output()
		require.True(t, utf8.ValidString(got))
		want, wantStop := referenceStop(referenceRepair(text), stops)
		require.Equal(t, want, got)
		require.Equal(t, wantStop, run.stopped)
	})
}

func isProperPrefixOfAny(s string, stops []string) bool {
	for _, stop := range stops {
		if len(s) < len(stop) && strings.HasPrefix(stop, s) {
			return true
		}
	}
	return false
}
