package chatfmt

import (
	"strings"
	"unicode"
)

// The tags reasoning models (Qwen3, DeepSeek-R1, Phi-4-reasoning and
// others) put around their reasoning at the start of an answer.
const (
	ThinkOpen  = "<think>"
	ThinkClose = "</think>"
)

// thinkTags separates a model's reasoning, between an open and a close tag
// at the start of its answer, from the answer itself, as text streams in:
// the shared piece of the families that think in tags. It holds back what
// may still turn out to be a tag, and the whitespace that pads the
// reasoning and follows it.
type thinkTags struct {
	open, close string
	state       int  // thinkUndecided, thinkReasoning, thinkAfter, thinkContent
	begun       bool // reasoning text came (the whitespace before it is dropped)
	opened      bool // the prompt opened the reasoning: a repeated open tag is dropped
	held        strings.Builder
}

const (
	thinkUndecided = iota // only whitespace, or a prefix of the open tag, so far
	thinkReasoning        // inside the tags
	thinkAfter            // just after the close tag: its whitespace is dropped
	thinkContent          // the answer
)

// NewThinkTags is a ReasoningSplitter for reasoning between openTag and closeTag
// at the start of an answer.
func NewThinkTags(openTag, closeTag string) ReasoningSplitter {
	return &thinkTags{open: openTag, close: closeTag}
}

// NewOpenedThinkTags is the splitter for a model whose prompt already
// opened its reasoning (DeepSeek-R1's template ends the prompt with
// <think>): the answer starts inside it, up to closeTag; an openTag the
// model writes again first is dropped.
func NewOpenedThinkTags(openTag, closeTag string) ReasoningSplitter {
	return &thinkTags{open: openTag, close: closeTag, state: thinkReasoning, opened: true}
}

// Push implements ReasoningSplitter.
func (t *thinkTags) Push(text string) (reasoning, content string) {
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
			case strings.HasPrefix(trimmed, t.open):
				t.state = thinkReasoning
				s = strings.TrimLeftFunc(trimmed[len(t.open):], unicode.IsSpace)
				continue
			case strings.HasPrefix(t.open, trimmed):
				t.hold(s) // "", whitespace, or the start of the tag
				return reasoning, content
			}
			t.state = thinkContent
			t.hold("")
			return reasoning, content + s
		case thinkReasoning:
			if !t.begun {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
				if t.opened {
					if strings.HasPrefix(t.open, s) {
						t.hold(s) // "", or what may be a repeated open tag
						return reasoning, content
					}
					s = strings.TrimLeftFunc(strings.TrimPrefix(s, t.open), unicode.IsSpace)
					t.opened = false
					if s == "" {
						t.hold("")
						return reasoning, content
					}
				}
				if s == "" {
					t.hold("")
					return reasoning, content
				}
				t.begun = true
			}
			if i := strings.Index(s, t.close); i >= 0 {
				reasoning += strings.TrimRightFunc(s[:i], unicode.IsSpace)
				s = s[i+len(t.close):]
				t.state = thinkAfter
				continue
			}
			// Keep what may be the start of the close tag, and trailing
			// whitespace (it is dropped if the tag follows).
			keep := len(s) - partialSuffix(s, t.close)
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

// Flush implements ReasoningSplitter.
func (t *thinkTags) Flush() (reasoning, content string) {
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

func (t *thinkTags) hold(s string) {
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
