package npu

// The bridge (npu/serve) runs an answer's text through these filters as it
// streams in; they are exported here, beside the code they wrap, so the
// bridge reads them through methods, never through their fields.

// UTF8Assembler holds a code point split across chunks until it is whole;
// bytes that can never be valid UTF-8 become U+FFFD.
type UTF8Assembler struct{ a utf8Assembler }

// Push takes the next chunk and returns the text that is whole.
func (a *UTF8Assembler) Push(chunk string) string { return a.a.push(chunk) }

// Flush returns what is still held, repaired.
func (a *UTF8Assembler) Flush() string { return a.a.flush() }

// StopMatcher finds stop strings in a stream of text, never releasing a
// prefix of one.
type StopMatcher struct{ m stopMatcher }

// NewStopMatcher matches stops.
func NewStopMatcher(stops []string) StopMatcher { return StopMatcher{m: stopMatcher{stops: stops}} }

// Push returns the text that can be released and whether a stop string
// was found; after a match the text from the stop string on is discarded.
func (m *StopMatcher) Push(text string) (release string, stopped bool) { return m.m.push(text) }

// Flush returns what is still held back: at the end it is no stop string.
func (m *StopMatcher) Flush() string { return m.m.flush() }

// Matched is the stop string that ended the output, "" while none did.
func (m *StopMatcher) Matched() string { return m.m.matched }

// ThinkSplitter separates a model's reasoning, between <think> and
// </think> at the start of its answer, from the answer itself.
type ThinkSplitter struct{ t thinkSplitter }

// Push takes the next text and returns what is now known to be reasoning
// and content.
func (t *ThinkSplitter) Push(text string) (reasoning, content string) { return t.t.push(text) }

// Flush returns what is still held, at the end of the answer.
func (t *ThinkSplitter) Flush() (reasoning, content string) { return t.t.flush() }

// ToolCallParser turns a model's answer into content and tool calls as it
// streams in, in the syntax of the model's family.
type ToolCallParser struct{ p *toolCallParser }

// NewToolCallParser parses calls written in format (ToolFormatHermes and
// the others) of tools; single ends the answer after the first call. It
// is nil for a format without calls to parse.
func NewToolCallParser(format string, tools []Tool, single bool) *ToolCallParser {
	p := newToolCallParser(format, tools, single)
	if p == nil {
		return nil
	}
	return &ToolCallParser{p: p}
}

// Push takes the next content and returns what is now known to be
// content, and pieces of calls.
func (p *ToolCallParser) Push(text string) (content string, calls []ToolCallDelta) {
	return p.p.push(text)
}

// Flush ends the answer; cut says a limit ended it.
func (p *ToolCallParser) Flush(cut bool) (content string, calls []ToolCallDelta) {
	return p.p.flush(cut)
}

// Finished reports that the answer must end: the one call allowed was made.
func (p *ToolCallParser) Finished() bool { return p.p.finished() }

// Calls is how many calls the model made.
func (p *ToolCallParser) Calls() int { return p.p.calls }

// Problems says what is wrong with the calls the model made.
func (p *ToolCallParser) Problems() []string { return append([]string(nil), p.p.problems...) }
