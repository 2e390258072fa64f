package chatfmt

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// Issue 16: reasoning is split from the answer whatever the chunking: the
// shapes Qwen3 (thinking and not), DeepSeek-R1 and plain models produce,
// cut at every character (the bridge's UTF-8 assembler runs first, so the
// splitter sees whole characters).
func TestThinkSplitter(t *testing.T) {
	for _, tc := range []struct {
		name, text, reasoning, content string
	}{
		{"qwen3 thinking", "<think>\nThe user greets me.\nI greet back.\n</think>\n\nHello!", "The user greets me.\nI greet back.", "Hello!"},
		{"qwen3 without thinking", "<think>\n\n</think>\n\nHello!", "", "Hello!"},
		{"no reasoning", "Hello, <think> is a tag.", "", "Hello, <think> is a tag."},
		{"leading whitespace", "  \n<think>a</think>b", "a", "b"},
		{"a tag later is content", "Answer: <think>x</think>", "", "Answer: <think>x</think>"},
		{"reasoning cut short", "<think>still thinking", "still thinking", ""},
		{"almost a tag", "<thin", "", "<thin"},
		{"a close tag inside reasoning split", "<think>a </thi nk> b</think>c", "a </thi nk> b", "c"},
		{"unicode", "<think>日本 🙂</think>\n答え", "日本 🙂", "答え"},
		{"empty", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for cut := range len(tc.text) + 1 {
				if cut < len(tc.text) && !utf8.RuneStart(tc.text[cut]) {
					continue
				}
				for _, chunks := range [][]string{{tc.text[:cut], tc.text[cut:]}, runesOf(tc.text)} {
					s := NewThinkTags(ThinkOpen, ThinkClose)
					var reasoning, content string
					for _, c := range chunks {
						r, t := s.Push(c)
						reasoning, content = reasoning+r, content+t
					}
					r, c := s.Flush()
					reasoning, content = reasoning+r, content+c
					assert.Equal(t, tc.reasoning, reasoning, "cut at %d / %d chunks", cut, len(chunks))
					assert.Equal(t, tc.content, content, "cut at %d / %d chunks", cut, len(chunks))
				}
			}
		})
	}
}

func runesOf(s string) []string {
	var out []string
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// DeepSeek-R1's template opens the reasoning in the prompt: the answer
// starts inside it.
func TestOpenedThinkSplitter(t *testing.T) {
	for _, tc := range []struct {
		name, text, reasoning, content string
	}{
		{"r1", "Okay, the user greets me.\n</think>\n\nHello!", "Okay, the user greets me.", "Hello!"},
		{"the open tag written again", "<think>\nHmm.\n</think>\n\nHi", "Hmm.", "Hi"},
		{"no reasoning at all", "\n\n</think>\n\nHi", "", "Hi"},
		{"a tag-like start is reasoning", "<b>bold</b> thought</think>x", "<b>bold</b> thought", "x"},
		{"cut short", "still thinking", "still thinking", ""},
		{"empty", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for cut := range len(tc.text) + 1 {
				if cut < len(tc.text) && !utf8.RuneStart(tc.text[cut]) {
					continue
				}
				for _, chunks := range [][]string{{tc.text[:cut], tc.text[cut:]}, runesOf(tc.text)} {
					s := NewOpenedThinkTags(ThinkOpen, ThinkClose)
					var reasoning, content string
					for _, c := range chunks {
						r, t := s.Push(c)
						reasoning, content = reasoning+r, content+t
					}
					r, c := s.Flush()
					assert.Equal(t, tc.reasoning, reasoning+r, "cut at %d", cut)
					assert.Equal(t, tc.content, content+c, "cut at %d", cut)
				}
			}
		})
	}
}
