package serve

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/jsonschema"
)

// formatParam is the parameter a bad format is charged to. Each API names
// its own field (response_format, text.format, format,
// output_config.format); the router knows none of them, so it uses the
// OpenAI chat name and an API may rename it.
const formatParam = "response_format"

// compileFormat is the schema the answer to req must match: nil for none,
// any JSON object for JSON mode, the request's schema compiled otherwise.
// A schema npud cannot hold an answer to is a request error (a 400),
// found before anything runs.
func compileFormat(f *npu.Format) (*jsonschema.Schema, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case npu.FormatJSONObject:
		return jsonschema.AnyObject(), nil
	case npu.FormatJSONSchema:
		if len(f.Schema) == 0 {
			return nil, &npu.InvalidRequestError{Param: formatParam, Message: "a json_schema format needs a schema"}
		}
		s, err := jsonschema.Compile(f.Schema)
		if err != nil {
			var unsupported *jsonschema.UnsupportedError
			msg := "invalid JSON Schema: " + err.Error()
			if errors.As(err, &unsupported) {
				msg = err.Error() + ": npud holds an answer only to the keywords it can guarantee (docs/API.md)"
			}
			return nil, &npu.InvalidRequestError{Param: formatParam, Message: msg}
		}
		return s, nil
	}
	return nil, &npu.InvalidRequestError{Param: formatParam, Message: fmt.Sprintf("unknown format type %q", f.Type)}
}

// document holds the answer's content to a format as it streams. The
// matcher sees every byte; the writer gets only the valid prefix, and of
// it not a number still open, whose value the schema may yet refuse (the
// matcher then keeps the prefix before the number).
type document struct {
	m    *jsonschema.Matcher
	text []byte // the valid text so far
	sent int    // bytes of text handed to the writer
	done bool   // the document is whole: the answer ends
	err  error  // the answer left the format
}

// answer passes answer text on, held to the request's format when it has
// one. It reports that the answer must end: its document is whole, or it
// left the format.
func (s *Stream) answer(text string) bool {
	d := s.doc
	if d == nil {
		s.appendText(text)
		return false
	}
	if d.done || d.err != nil {
		return true // text after the document is not part of the answer
	}
	for i := range len(text) {
		if !d.m.Push(text[i : i+1]) {
			d.text = wholeRunes(d.text[:d.m.ValidLen()])
			s.release(len(d.text))
			d.err = fmt.Errorf("the answer left the requested format after %d bytes of its document: %w", len(d.text), npu.ErrStructuredOutput)
			return true
		}
		d.text = append(d.text, text[i])
		if d.m.Complete() && openNumber(d.text) == 0 {
			s.release(len(d.text))
			d.done = true
			return true
		}
	}
	s.release(len(d.text) - openNumber(d.text))
	return false
}

// release hands the writer the document's text up to end.
func (s *Stream) release(end int) {
	d := s.doc
	if end > d.sent {
		s.appendText(string(d.text[d.sent:end]))
		d.sent = end
	}
}

// endDocument judges the answer's document when the engine ended without
// an error: whole, it is released whole and the generation finished
// "stop"; an answer that made tool calls and wrote no document is those
// calls; otherwise the stream ends with ErrStructuredOutput after the
// valid prefix.
func (s *Stream) endDocument(res npu.Result) {
	d := s.doc
	if d == nil || d.done || d.err != nil {
		return
	}
	if d.m.Complete() {
		s.release(len(d.text))
		d.done = true
		s.stopReason = npu.FinishStop
		return
	}
	if s.tools != nil && s.tools.Calls() > 0 && onlySpace(d.text) {
		return
	}
	// A number left open is not sent: the end of the answer ended it, and
	// its value was never checked.
	s.release(len(d.text) - openNumber(d.text))
	why := "the answer ended"
	if res.FinishReason == npu.FinishLength || s.stopReason == npu.FinishLength {
		why = "the answer was cut short (its completion limit or deadline)"
	}
	d.err = fmt.Errorf("%s before its document was whole (%d bytes of it): %w", why, d.sent, npu.ErrStructuredOutput)
}

// openNumber is how many bytes at the end of text may be a number not yet
// ended: digits, signs, points and exponents (a run of them that is not a
// number is held only until the next byte).
func openNumber(text []byte) int {
	n := 0
	for n < len(text) {
		c := text[len(text)-1-n]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		n++
	}
	return n
}

// wholeRunes drops an incomplete character at the end of text (the matcher
// may refuse a character at its second byte).
func wholeRunes(text []byte) []byte {
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRune(text[i:]) {
				return text[:i]
			}
			break
		}
	}
	return text
}

func onlySpace(text []byte) bool {
	for _, c := range text {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
