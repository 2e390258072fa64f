package npu

import (
	"fmt"
	"strings"
)

// Validate checks the request against the engine's own limits: OpenVINO
// GenAI's GenerationConfig::validate() bounds, and text the native side
// cannot carry (a NUL would silently cut a C string short). Both API layers
// call it after decoding, so they accept and refuse the same things; their
// own protocol limits (OpenAI's temperature ≤ 2) come on top.
func (r *Request) Validate() error {
	bad := func(param, format string, args ...any) error {
		return &InvalidRequestError{Param: param, Message: fmt.Sprintf(format, args...)}
	}
	if strings.IndexByte(r.Prompt, 0) >= 0 {
		return bad("prompt", "'prompt' contains a NUL character, which cannot be passed to the model")
	}
	for i, m := range r.Messages {
		if strings.IndexByte(m.Content, 0) >= 0 {
			return bad(fmt.Sprintf("messages[%d].content", i), "messages[%d].content contains a NUL character, which cannot be passed to the model", i)
		}
		if strings.IndexByte(m.Role, 0) >= 0 {
			return bad(fmt.Sprintf("messages[%d].role", i), "messages[%d].role contains a NUL character", i)
		}
	}
	for i, s := range r.Stop {
		if strings.IndexByte(s, 0) >= 0 {
			return bad("stop", "stop[%d] contains a NUL character, which cannot be passed to the model", i)
		}
	}
	if r.MaxTokens < 0 {
		return bad("max_tokens", "'max_tokens' must be at least 1, got %d", r.MaxTokens)
	}
	s := r.Sampling
	// GenAI checks top_p, min_p and temperature only when sampling; the
	// binding sets them only then too, but a value that would be refused
	// once the model samples is refused always, so the answer does not
	// depend on the model's generation_config.json.
	type bound struct {
		param  string
		v      *float64
		ok     func(float64) bool
		expect string
	}
	for _, b := range []bound{
		{"temperature", s.Temperature, func(v float64) bool { return v >= 0 }, "at least 0 (0 means greedy)"},
		{"top_p", s.TopP, func(v float64) bool { return v > 0 && v <= 1 }, "greater than 0 and at most 1"},
		{"min_p", s.MinP, func(v float64) bool { return v >= 0 && v < 1 }, "at least 0 and less than 1"},
		{"repetition_penalty", s.RepetitionPenalty, func(v float64) bool { return v > 0 }, "greater than 0"},
		{"presence_penalty", s.PresencePenalty, func(v float64) bool { return v >= -2 && v <= 2 }, "between -2 and 2"},
		{"frequency_penalty", s.FrequencyPenalty, func(v float64) bool { return v >= -2 && v <= 2 }, "between -2 and 2"},
	} {
		if b.v != nil && !b.ok(*b.v) { // NaN fails every test
			return bad(b.param, "'%s' must be %s, got %g", b.param, b.expect, *b.v)
		}
	}
	if s.TopK != nil && *s.TopK < 0 {
		return bad("top_k", "'top_k' must be 0 (off) or more, got %d", *s.TopK)
	}
	return nil
}

// Normalize puts the messages in the one form every request gets, so that
// a client that sends back exactly what it received continues its
// conversation whatever its line endings and the whitespace around the
// answer it streamed: roles lower-case, CRLF as LF, an assistant message
// without surrounding whitespace.
func (r *Request) Normalize() {
	for i := range r.Messages {
		m := &r.Messages[i]
		m.Role = strings.ToLower(strings.TrimSpace(m.Role))
		m.Content = strings.ReplaceAll(m.Content, "\r\n", "\n")
		if m.Role == "assistant" {
			m.Content = strings.TrimSpace(m.Content)
		}
	}
}
