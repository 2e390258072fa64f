package chatfmt

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// jsonSyntax is how a family that writes its calls as JSON objects marks
// them: the shared piece of the JSON-in-markers families.
type jsonSyntax struct {
	openers []string // begin a block of calls anywhere in the answer
	closers []string // end a block
	// bare: a JSON object or array that opens the answer is a block of
	// calls, as when the detokenizer skipped the opening special token.
	bare bool
	// shortIDs: the family's chat template insists on nine alphanumeric
	// characters in tool call ids (Mistral's raises otherwise).
	shortIDs bool
}

// jsonCallParser turns a model's answer into content and tool calls as it
// streams in. While what is being generated may still be a call, none of
// it is released as content (the hold-back discipline of stop strings);
// text that turns out not to be a call is released as it was. A call's
// name is sent as soon as it is known, its arguments as they come.
type jsonCallParser struct {
	syn    jsonSyntax
	tools  []Tool
	single bool // parallel tool calls are off: the answer ends with the first call
	// document: bare JSON naming no declared tool is a structured answer
	// (ParserOptions.Document).
	document bool

	state      int  // toolText, toolBlock, toolObject
	atStart    bool // nothing but whitespace was released so far
	afterCall  bool // the last thing was a call: whitespace before the next is dropped
	held       string
	block      strings.Builder // the text of the current block, released if no call comes of it
	blockCalls int
	inArray    bool
	calls      int // calls made (the next call's index)
	done       bool

	// The call being read.
	obj      []byte
	outer    jsonScanner // over obj: where the object ends
	whole    bool        // its name does not come first: it is decoded when complete
	header   bool        // its name was sent; its arguments follow as they come
	argsFrom int         // where the arguments begin in obj
	argsSent int         // what of them was sent
	args     jsonScanner // over the arguments: where they end
	argsEnd  int         // 0 until they ended
	argText  strings.Builder
	name     string

	problems []string
}

const (
	toolText = iota
	toolBlock
	toolObject
)

// newJSONCallParser is a parser of calls written as JSON in syn's markers.
func newJSONCallParser(syn jsonSyntax, opts ParserOptions) *jsonCallParser {
	return &jsonCallParser{syn: syn, tools: opts.Tools, single: opts.Single, document: opts.Document, atStart: true}
}

// Push implements CallParser.
func (p *jsonCallParser) Push(text string) Output {
	if p.done {
		return Output{}
	}
	p.held += text
	var out strings.Builder
	var calls []CallDelta
	for p.step(&out, &calls, false) {
	}
	return Output{Content: out.String(), Calls: calls}
}

// Flush implements CallParser.
func (p *jsonCallParser) Flush(cut bool) Output {
	content, calls := p.flush(cut)
	return Output{Content: content, Calls: calls}
}

// Calls implements CallParser.
func (p *jsonCallParser) Calls() int { return p.calls }

// Problems implements CallParser.
func (p *jsonCallParser) Problems() []string { return p.problems }

// flush ends the answer (see CallParser.Flush): a call's opener a limit
// cut in two is dropped, not shown as text.
func (p *jsonCallParser) flush(cut bool) (content string, calls []CallDelta) {
	if p.done {
		return "", nil
	}
	var out strings.Builder
	for p.step(&out, &calls, true) {
	}
	switch p.state {
	case toolObject:
		switch {
		case p.header:
			calls = p.endStreamedCall(calls, "its arguments were cut short")
		case p.opened() || !p.whole:
			// A call cut short before its name (max_tokens, a deadline):
			// its markup is no answer, and there is no call to return.
			p.dropCut()
		default:
			p.notACall(&out) // JSON that did not start as a call: content
		}
	case toolBlock:
		if p.blockCalls == 0 {
			if p.opened() {
				p.dropCut()
			} else {
				p.notACall(&out)
			}
		}
	}
	if cut && p.state == toolText {
		keep := 0
		for _, o := range p.syn.openers {
			keep = max(keep, partialSuffix(p.held, o))
		}
		if keep > 0 {
			p.problems = append(p.problems, fmt.Sprintf("the answer was cut in a call's opener (%q): dropped", p.held[len(p.held)-keep:]))
			p.held = p.held[:len(p.held)-keep]
		}
	}
	if !p.afterCall || strings.TrimSpace(p.held) != "" {
		out.WriteString(p.held)
	}
	p.held = ""
	p.state = toolText
	return out.String(), calls
}

// Finished implements CallParser.
func (p *jsonCallParser) Finished() bool { return p.done }

// step makes one move; false when it needs more text.
func (p *jsonCallParser) step(out *strings.Builder, calls *[]CallDelta, atEnd bool) bool {
	switch p.state {
	case toolText:
		return p.stepText(out, atEnd)
	case toolBlock:
		return p.stepBlock(out, atEnd)
	case toolObject:
		return p.stepObject(out, calls)
	}
	return false
}

func (p *jsonCallParser) release(out *strings.Builder, s string) {
	if s == "" {
		return
	}
	out.WriteString(s)
	if strings.TrimSpace(s) != "" {
		p.atStart, p.afterCall = false, false
	}
}

func (p *jsonCallParser) stepText(out *strings.Builder, atEnd bool) bool {
	trimmed := strings.TrimLeftFunc(p.held, unicode.IsSpace)
	if p.atStart || p.afterCall {
		if trimmed == "" {
			return false // whitespace: kept until what follows it is known
		}
		if p.syn.bare && p.atStart && (trimmed[0] == '{' || trimmed[0] == '[') && !p.mayOpen(trimmed, atEnd) {
			p.openBlock(p.held[:len(p.held)-len(trimmed)])
			p.held = trimmed
			return true
		}
	}
	i, opener := -1, ""
	for _, o := range p.syn.openers {
		if j := strings.Index(p.held, o); j >= 0 && (i < 0 || j < i) {
			i, opener = j, o
		}
	}
	if i >= 0 {
		before := p.held[:i]
		if (p.atStart || p.afterCall) && strings.TrimSpace(before) == "" {
			before = "" // the whitespace before a call is no content
		}
		p.release(out, before)
		p.openBlock(opener)
		p.held = p.held[i+len(opener):]
		return true
	}
	if atEnd {
		return false
	}
	keep := 0
	for _, o := range p.syn.openers {
		keep = max(keep, partialSuffix(p.held, o))
	}
	if (p.atStart || p.afterCall) && strings.TrimSpace(p.held[:len(p.held)-keep]) == "" {
		return false
	}
	p.release(out, p.held[:len(p.held)-keep])
	p.held = p.held[len(p.held)-keep:]
	return false
}

// mayOpen: s starts with an opener ([TOOL_CALLS]), or may still.
func (p *jsonCallParser) mayOpen(s string, atEnd bool) bool {
	for _, o := range p.syn.openers {
		if strings.HasPrefix(s, o) || (!atEnd && strings.HasPrefix(o, s)) {
			return true
		}
	}
	return false
}

func (p *jsonCallParser) openBlock(text string) {
	p.state, p.blockCalls, p.inArray = toolBlock, 0, false
	p.block.Reset()
	p.block.WriteString(text)
}

// notACall releases the block read so far as content: it was no call.
func (p *jsonCallParser) notACall(out *strings.Builder) {
	p.release(out, p.block.String()+string(p.obj))
	p.block.Reset()
	p.obj = p.obj[:0]
	p.state = toolText
	p.atStart = false
}

// opened reports that the current block began with the family's opener
// (<tool_call>, [TOOL_CALLS]), not with bare JSON: what follows is a call.
func (p *jsonCallParser) opened() bool {
	block := strings.TrimLeftFunc(p.block.String(), unicode.IsSpace)
	for _, o := range p.syn.openers {
		if strings.HasPrefix(block, o) {
			return true
		}
	}
	return false
}

// dropCut drops a call the answer ended in before its name came, and says
// so in the problems (the access log): it is never shown as text.
func (p *jsonCallParser) dropCut() {
	p.problems = append(p.problems, fmt.Sprintf("call %d was cut short before its name (%q): dropped",
		p.calls, clipProblem(p.block.String()+string(p.obj))))
	p.block.Reset()
	p.obj = p.obj[:0]
	p.state = toolText
	p.atStart = false
}

// clipProblem bounds model text quoted in a problem.
func clipProblem(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (p *jsonCallParser) stepBlock(out *strings.Builder, atEnd bool) bool {
	i := 0
	for i < len(p.held) && (unicode.IsSpace(rune(p.held[i])) || p.held[i] == ',' || p.held[i] == ';') {
		i++
	}
	p.block.WriteString(p.held[:i])
	p.held = p.held[i:]
	if p.held == "" {
		return false
	}
	switch c := p.held[0]; {
	case c == '[' && !p.inArray && p.blockCalls == 0:
		p.inArray = true
		p.block.WriteByte(c)
		p.held = p.held[1:]
		return true
	case c == ']' && p.inArray:
		p.inArray = false
		p.block.WriteByte(c)
		p.held = p.held[1:]
		return true
	case c == '{':
		p.startObject()
		return true
	}
	for _, cl := range p.syn.closers {
		if strings.HasPrefix(p.held, cl) {
			p.held = p.held[len(cl):]
			p.endBlock()
			return true
		}
		if strings.HasPrefix(cl, p.held) && !atEnd {
			return false // may be the closer
		}
	}
	if p.blockCalls == 0 {
		p.notACall(out)
		return true
	}
	p.endBlock() // what follows the calls is text again
	return true
}

func (p *jsonCallParser) endBlock() {
	p.state, p.afterCall, p.atStart = toolText, true, false
	p.block.Reset()
}

func (p *jsonCallParser) startObject() {
	p.state = toolObject
	p.obj = p.obj[:0]
	p.outer, p.args = jsonScanner{}, jsonScanner{}
	p.whole, p.header = false, false
	p.argsFrom, p.argsSent, p.argsEnd = 0, 0, 0
	p.argText.Reset()
	p.name = ""
}

func (p *jsonCallParser) stepObject(out *strings.Builder, calls *[]CallDelta) bool {
	n := 0
	complete := false
	for n < len(p.held) {
		c := p.held[n]
		n++
		if p.outer.feed(c) {
			complete = true
			break
		}
	}
	p.obj = append(p.obj, p.held[:n]...)
	p.held = p.held[n:]
	if !p.whole && !p.header {
		switch id, name, from, verdict := callHeader(p.obj); verdict {
		case headerReady:
			if p.document && !p.opened() && !p.declared(name) {
				// Bare JSON naming no declared tool is the answer itself
				// (a structured answer with a "name" key), not a call.
				p.notACall(out)
				return true
			}
			p.header, p.name, p.argsFrom, p.argsSent = true, name, from, from
			if id == "" {
				id = p.newID()
			}
			*calls = append(*calls, CallDelta{Index: p.calls, ID: id, Name: name})
		case headerOther:
			p.whole = true
		}
	}
	if p.header {
		p.sendArgs(calls)
	}
	if !complete {
		return false
	}
	if p.header {
		*calls = p.endStreamedCall(*calls, "")
	} else if !p.decodeWhole(calls) {
		p.notACall(out)
		return true
	}
	p.state = toolBlock
	p.block.Write(p.obj)
	p.obj = p.obj[:0]
	if p.single {
		p.done = true
		return false
	}
	return true
}

// declared reports whether the request declared a tool of that name.
func (p *jsonCallParser) declared(name string) bool {
	for _, t := range p.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// sendArgs sends what came of the arguments since the last piece.
func (p *jsonCallParser) sendArgs(calls *[]CallDelta) {
	end := len(p.obj)
	if p.argsEnd == 0 {
		for i := max(p.argsSent, p.argsFrom); i < len(p.obj); i++ {
			if p.args.feed(p.obj[i]) {
				p.argsEnd = i + 1
				break
			}
		}
	}
	if p.argsEnd > 0 {
		end = p.argsEnd
	}
	if end > p.argsSent {
		piece := string(p.obj[p.argsSent:end])
		p.argText.WriteString(piece)
		p.argsSent = end
		*calls = append(*calls, CallDelta{Index: p.calls, Arguments: piece})
	}
}

func (p *jsonCallParser) endStreamedCall(calls []CallDelta, cut string) []CallDelta {
	args := p.argText.String()
	if cut != "" {
		p.problems = append(p.problems, fmt.Sprintf("call %d to %q: %s", p.calls, p.name, cut))
	} else {
		p.check(p.name, args)
	}
	calls = append(calls, CallDelta{Index: p.calls, Done: true})
	p.calls++
	p.blockCalls++
	p.afterCall = true
	return calls
}

// decodeWhole reads a complete object whose name did not come first:
// {"arguments": …, "name": …}, {"type": "function", "function": {…}},
// or arguments written as a JSON string. False when it is no call.
func (p *jsonCallParser) decodeWhole(calls *[]CallDelta) bool {
	var c struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
		Function   *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(p.obj, &c) != nil {
		return false
	}
	args := c.Arguments
	if args == nil {
		args = c.Parameters
	}
	if c.Name == "" && c.Function != nil {
		c.Name, args = c.Function.Name, c.Function.Arguments
	}
	if c.Name == "" || (p.document && !p.opened() && !p.declared(c.Name)) {
		return false
	}
	text := "{}"
	if len(args) > 0 {
		var s string
		if json.Unmarshal(args, &s) == nil {
			text = s // arguments as a JSON string: its text is the JSON
		} else {
			text = string(args)
		}
	}
	p.check(c.Name, text)
	id := c.ID
	if id == "" {
		id = p.newID()
	}
	*calls = append(*calls, CallDelta{Index: p.calls, ID: id, Name: c.Name, Arguments: text, Done: true})
	p.calls++
	p.blockCalls++
	p.afterCall = true
	return true
}

// check records what is wrong with a call against the declared tools: the
// call is returned anyway (clients validate), and the log says so.
func (p *jsonCallParser) check(name, args string) {
	for _, t := range p.tools {
		if t.Name == name {
			if problem := CheckArguments(args, t.Parameters); problem != "" {
				p.problems = append(p.problems, fmt.Sprintf("call %d to %q: %s", p.calls, name, problem))
			}
			return
		}
	}
	p.problems = append(p.problems, fmt.Sprintf("call %d to %q: the request declares no tool of that name", p.calls, name))
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newID is a call's id: call_ and 24 characters, or nine characters for
// families whose templates insist on that.
func (p *jsonCallParser) newID() string { return newCallID(p.syn.shortIDs) }

// newCallID is a new call's id: call_ and 24 characters, or nine
// characters when short.
func newCallID(short bool) string {
	n, prefix := 24, "call_"
	if short {
		n, prefix = 9, ""
	}
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return prefix + string(b)
}

type headerVerdict int

const (
	headerMore  headerVerdict = iota // not enough text yet
	headerReady                      // the name came first and the arguments are an object
	headerOther                      // another shape: decode it whole
)

// callHeader reads the start of a call object: {"name": "…",
// "arguments"|"parameters": { — the shape every family's template
// teaches, optionally after an "id" (an upstream server's calls, relayed
// in this shape, keep their ids) — and returns the id, the name and where
// the arguments begin.
func callHeader(obj []byte) (id, name string, argsAt int, v headerVerdict) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // the '{'
		return "", "", 0, headerMore
	}
	// A key or the name is a string or the object is no call header, as
	// soon as its first byte says so: decoding a number at the end of the
	// text so far would read "0" as a whole token but "0." as one cut
	// short, and the verdict would depend on where the engine cut the
	// text.
	str := func() (string, headerVerdict) {
		switch nextTokenByte(obj, int(dec.InputOffset())) {
		case 0:
			return "", headerMore
		case '"':
		default:
			return "", headerOther
		}
		tok, err := dec.Token()
		if err != nil {
			return "", headerMore
		}
		s, ok := tok.(string)
		if !ok {
			return "", headerOther
		}
		return s, headerReady
	}
	key, v := str()
	if v != headerReady {
		return "", "", 0, v
	}
	if key == "id" {
		if id, v = str(); v != headerReady {
			return "", "", 0, v
		}
		if key, v = str(); v != headerReady {
			return "", "", 0, v
		}
	}
	if key != "name" {
		return "", "", 0, headerOther
	}
	if name, v = str(); v != headerReady || name == "" {
		if v == headerMore {
			return "", "", 0, headerMore
		}
		return "", "", 0, headerOther
	}
	if key, v = str(); v != headerReady {
		return "", "", 0, v
	}
	if key != "arguments" && key != "parameters" {
		return "", "", 0, headerOther
	}
	i := int(dec.InputOffset())
	for i < len(obj) && (obj[i] == ':' || unicode.IsSpace(rune(obj[i]))) {
		i++
	}
	switch {
	case i == len(obj):
		return "", "", 0, headerMore
	case obj[i] != '{':
		return "", "", 0, headerOther // arguments as a string: decoded whole
	}
	return id, name, i, headerReady
}

// nextTokenByte is the first byte of the JSON token at or after from, past
// whitespace and the separators the decoder skips; 0 when none came yet.
func nextTokenByte(obj []byte, from int) byte {
	for _, c := range obj[min(from, len(obj)):] {
		switch c {
		case ' ', '\t', '\n', '\r', ':', ',':
		default:
			return c
		}
	}
	return 0
}

// jsonScanner finds where a JSON object or array ends, a byte at a time.
type jsonScanner struct {
	depth      int
	inStr, esc bool
	started    bool
}

// feed takes the next byte and reports whether it closed the value.
func (s *jsonScanner) feed(c byte) bool {
	switch {
	case s.esc:
		s.esc = false
	case s.inStr:
		switch c {
		case '\\':
			s.esc = true
		case '"':
			s.inStr = false
		}
	case c == '"':
		s.inStr = true
	case c == '{' || c == '[':
		s.depth++
		s.started = true
	case c == '}' || c == ']':
		s.depth--
		return s.started && s.depth == 0
	}
	return false
}

// jsonCall is the JSON object in which the JSON-in-markers families write
// a call: {"name": …, argsKey: {…}}. Arguments that are no JSON text are
// written as {}: a call's arguments are an object.
func jsonCall(c Call, argsKey string) string {
	name, _ := json.Marshal(c.Name) // a string: always encodes
	key, _ := json.Marshal(argsKey)
	args := strings.TrimSpace(c.Arguments)
	if !json.Valid([]byte(args)) || args[0] != '{' {
		args = "{}"
	}
	return "{\"name\": " + string(name) + ", " + string(key) + ": " + args + "}"
}

// jsonCallArray is calls as one JSON array of jsonCall objects.
func jsonCallArray(calls []Call, argsKey string) string {
	objs := make([]string, len(calls))
	for i, c := range calls {
		objs[i] = jsonCall(c, argsKey)
	}
	return "[" + strings.Join(objs, ", ") + "]"
}
