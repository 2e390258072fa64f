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
