package npu

import (
	"strings"
	"unicode"
)

// The tags reasoning models (Qwen3, DeepSeek-R1, Phi-4-reasoning and
// others) put around their reasoning at the start of an answer.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// thinkSplitter separates a model's reasoning, between <think> and
// </think> at the start of its answer, from the answer itself, as text
// streams in: reasoning is never mixed into the content. It holds back
// what may still turn out to be a tag, and the whitespace that pads the
// reasoning and follows it.
type thinkSplitter struct {
	state int  // thinkUndecided, thinkReasoning, thinkAfter, thinkContent
	begun bool // reasoning text came (the whitespace before it is dropped)
	held  strings.Builder
}

const (
	thinkUndecided = iota // only whitespace, or a prefix of <think>, so far
	thinkReasoning        // inside <think>
	thinkAfter            // just after </think>: its whitespace is dropped
	thinkContent          // the answer
)

// push takes the next text and returns what is now known to be reasoning
// and content.
func (t *thinkSplitter) push(text string) (reasoning, content string) {
	if t.state == thinkContent {
		return "", text
	}
	t.held.WriteString(text)
	s := t.held.String()
	for {
		switch t.state {
		case thinkUndecided:
			trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
			switch {
			case strings.HasPrefix(trimmed, thinkOpen):
				t.state = thinkReasoning
				s = strings.TrimLeftFunc(trimmed[len(thinkOpen):], unicode.IsSpace)
				continue
			case strings.HasPrefix(thinkOpen, trimmed):
				t.hold(s) // "", whitespace, or the start of the tag
				return reasoning, content
			}
			t.state = thinkContent
			t.hold("")
			return reasoning, content + s
		case thinkReasoning:
			if !t.begun {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
				if s == "" {
					t.hold("")
					return reasoning, content
				}
				t.begun = true
			}
			if i := strings.Index(s, thinkClose); i >= 0 {
				reasoning += strings.TrimRightFunc(s[:i], unicode.IsSpace)
				s = s[i+len(thinkClose):]
				t.state = thinkAfter
				continue
			}
			// Keep what may be the start of </think>, and trailing
			// whitespace (it is dropped if the tag follows).
			keep := len(s) - partialSuffix(s, thinkClose)
			body := strings.TrimRightFunc(s[:keep], unicode.IsSpace)
			reasoning += body
			t.hold(s[len(body):])
			return reasoning, content
		case thinkAfter:
			trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
			if trimmed == "" {
				t.hold("")
				return reasoning, content
			}
			t.state = thinkContent
			t.hold("")
			return reasoning, content + trimmed
		}
	}
}

// flush ends the answer: what is held goes where it belongs.
func (t *thinkSplitter) flush() (reasoning, content string) {
	s := t.held.String()
	t.hold("")
	switch t.state {
	case thinkUndecided:
		return "", strings.TrimSpace(s) // whitespace only, or a bare "<thi"
	case thinkReasoning:
		return strings.TrimRightFunc(s, unicode.IsSpace), "" // a reasoning cut short
	}
	return "", ""
}

func (t *thinkSplitter) hold(s string) {
	t.held.Reset()
	t.held.WriteString(s)
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}
