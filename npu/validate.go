package npu

import (
	"fmt"
	"strings"
)

// Validate checks the request against the engine's own limits: OpenVINO
// GenAI's GenerationConfig::validate() bounds, and text the native side
// cannot carry (a NUL would silently cut a C string short). Every API calls
// it after decoding, so they accept and refuse the same things, and none
// keeps bounds of its own.
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
	for _, b := range samplingBounds {
		if v := b.field(&s); v != nil && !b.holds(*v) {
			return bad(b.param, "'%s' must be %s, got %g", b.param, b.text, *v)
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

// samplingBound is the range a sampling parameter must fall in.
type samplingBound struct {
	param            string // as OpenAI names it; an API names it its own way when it reports it
	field            func(*Sampling) *float64
	min, max         float64
	minOpen, maxOpen bool   // the bound itself is outside
	text             string // the range, for people
}

// holds reports whether v is in the range; NaN is not.
func (b samplingBound) holds(v float64) bool {
	return v >= b.min && v <= b.max && !(b.minOpen && v == b.min) && !(b.maxOpen && v == b.max)
}

// samplingBounds is the one table of the sampling parameters' ranges, in
// the order Validate checks them: GenAI's bounds (temperature at least 0,
// top_p in (0, 1], min_p in [0, 1), a repetition penalty above 0), and
// the ranges npud serves on top of them (temperature at most 2 and the
// penalties as OpenAI's API has them, a repetition penalty at most 100).
var samplingBounds = [...]samplingBound{
	{param: "temperature", field: func(s *Sampling) *float64 { return s.Temperature },
		min: 0, max: 2, text: "between 0 and 2 (0 means greedy)"},
	{param: "top_p", field: func(s *Sampling) *float64 { return s.TopP },
		min: 0, max: 1, minOpen: true, text: "greater than 0 and at most 1"},
	{param: "min_p", field: func(s *Sampling) *float64 { return s.MinP },
		min: 0, max: 1, maxOpen: true, text: "at least 0 and less than 1"},
	{param: "repetition_penalty", field: func(s *Sampling) *float64 { return s.RepetitionPenalty },
		min: 0, max: 100, minOpen: true, text: "greater than 0 and at most 100"},
	{param: "presence_penalty", field: func(s *Sampling) *float64 { return s.PresencePenalty },
		min: -2, max: 2, text: "between -2 and 2"},
	{param: "frequency_penalty", field: func(s *Sampling) *float64 { return s.FrequencyPenalty },
		min: -2, max: 2, text: "between -2 and 2"},
}
