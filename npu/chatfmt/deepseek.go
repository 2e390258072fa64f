package chatfmt

import (
	"fmt"
	"strings"
)

// DeepSeekR1 is the format of DeepSeek-R1 and the Qwen and Llama models
// distilled from it: calls in a block of special tokens, each its type,
// its name on a line and its arguments in a JSON code fence,
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Oslo"}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// and its reasoning between <think> and </think> before the answer.
type DeepSeekR1 struct{}

// The markers of DeepSeek-R1's calls.
const (
	deepSeekCallsBegin = "<｜tool▁calls▁begin｜>"
	deepSeekCallsEnd   = "<｜tool▁calls▁end｜>"
	deepSeekCallBegin  = "<｜tool▁call▁begin｜>"
	deepSeekCallEnd    = "<｜tool▁call▁end｜>"
	deepSeekSep        = "<｜tool▁sep｜>"
)

// Name implements Family.
func (DeepSeekR1) Name() string { return "deepseek-r1" }

// Recognise implements Family: the template writes DeepSeek's call block
// or its assistant token; its distills' architectures are Qwen's and
// Llama's, so the architecture says nothing.
func (DeepSeekR1) Recognise(template, _ string) Match {
	if strings.Contains(template, deepSeekCallsBegin) || strings.Contains(template, "<｜Assistant｜>") {
		return TemplateMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (DeepSeekR1) NewCallParser(opts ParserOptions) CallParser {
	return &deepSeekCallParser{tools: opts.Tools, single: opts.Single, atStart: true}
}

// NewReasoningSplitter implements Family.
func (DeepSeekR1) NewReasoningSplitter() ReasoningSplitter {
	return NewOpenedThinkTags(ThinkOpen, ThinkClose) // its template ends the prompt with <think>
}

// WriteCalls implements Family. Arguments that are no JSON object are
// written as {}.
func (DeepSeekR1) WriteCalls(calls []Call) string {
	blocks := make([]string, len(calls))
	for i, c := range calls {
		args := strings.TrimSpace(c.Arguments)
		if v, err := decodeMinjaValue([]byte(args)); err != nil || v.kind != minjaObject {
			args = "{}"
		}
		blocks[i] = deepSeekCallBegin + "function" + deepSeekSep + c.Name + "\n```json\n" + args + "\n```" + deepSeekCallEnd
	}
	return deepSeekCallsBegin + strings.Join(blocks, "\n") + deepSeekCallsEnd
}

// ToolsInSystemMessage implements Family.
func (DeepSeekR1) ToolsInSystemMessage() bool { return false }

// Templates implements the renderer registry (render.go).
func (DeepSeekR1) Templates() []Template {
	return []Template{{Name: "deepseek-r1", SHA256: []string{deepSeekR1TemplateSHA256}, Renderer: deepSeekR1Renderer{}}}
}

// deepSeekCallParser reads DeepSeek-R1's calls as they stream in. What may
// still be a call is held back; what turns out not to be one is released
// as it was. A call's name is sent once its arguments' object begins, its
// arguments as they come.
type deepSeekCallParser struct {
	tools  []Tool
	single bool

	state     int
	atStart   bool // nothing but whitespace was released so far
	afterCall bool // whitespace before what follows a call is dropped
	held      string
	block     strings.Builder // the text of a block that may be no call
	calls     int             // calls made
	inBlock   int             // calls made in this block
	done      bool

	name     string
	args     strings.Builder
	scanner  jsonScanner
	problems []string
}

const (
	deepSeekText     = iota
	deepSeekBlock    // between the calls of a block
	deepSeekHeader   // after <｜tool▁call▁begin｜>: the type, the separator, the name
	deepSeekFence    // after the name: the code fence before the arguments
	deepSeekArgs     // the arguments' object
	deepSeekCallTail // after the arguments: the fence's end and <｜tool▁call▁end｜>
)

// deepSeekMaxHeader bounds the text between a call's begin marker and its
// arguments: longer is no call.
const deepSeekMaxHeader = 512

// Push implements CallParser.
func (p *deepSeekCallParser) Push(text string) Output {
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
func (p *deepSeekCallParser) Flush(cut bool) Output {
	if p.done {
		return Output{}
	}
	var out strings.Builder
	var calls []CallDelta
	for p.step(&out, &calls, true) {
	}
	switch p.state {
	case deepSeekHeader, deepSeekFence:
		p.problems = append(p.problems, fmt.Sprintf("call %d was cut short before its arguments (%q): dropped",
			p.calls, clipProblem(p.block.String()+p.held)))
		p.held = ""
	case deepSeekArgs:
		p.problems = append(p.problems, fmt.Sprintf("call %d to %q: its arguments were cut short", p.calls, p.name))
		calls = p.endCall(calls, false)
	case deepSeekText:
		if cut {
			if keep := max(partialSuffix(p.held, deepSeekCallsBegin), partialSuffix(p.held, deepSeekCallBegin)); keep > 0 {
				p.problems = append(p.problems, fmt.Sprintf("the answer was cut in a call's opener (%q): dropped", p.held[len(p.held)-keep:]))
				p.held = p.held[:len(p.held)-keep]
			}
		}
		if !p.afterCall || strings.TrimSpace(p.held) != "" {
			out.WriteString(p.held)
		}
	case deepSeekBlock:
		if p.inBlock == 0 {
			p.problems = append(p.problems, fmt.Sprintf("a block of calls with none (%q): dropped", clipProblem(p.block.String()+p.held)))
		}
	}
	p.held, p.state = "", deepSeekText
	p.block.Reset()
	return Output{Content: out.String(), Calls: calls}
}

// Finished implements CallParser.
func (p *deepSeekCallParser) Finished() bool { return p.done }

// Calls implements CallParser.
func (p *deepSeekCallParser) Calls() int { return p.calls }

// Problems implements CallParser.
func (p *deepSeekCallParser) Problems() []string { return p.problems }

// step makes one move; false when it needs more text.
func (p *deepSeekCallParser) step(out *strings.Builder, calls *[]CallDelta, atEnd bool) bool {
	switch p.state {
	case deepSeekText:
		return p.stepText(out, atEnd)
	case deepSeekBlock:
		return p.stepBlock(out, atEnd)
	case deepSeekHeader:
		return p.stepHeader(out)
	case deepSeekFence:
		return p.stepFence(out, calls)
	case deepSeekArgs:
		return p.stepArgs(calls)
	case deepSeekCallTail:
		return p.stepTail(atEnd)
	}
	return false
}

func (p *deepSeekCallParser) release(out *strings.Builder, s string) {
	out.WriteString(s)
	if strings.TrimSpace(s) != "" {
		p.atStart, p.afterCall = false, false
	}
}

func (p *deepSeekCallParser) stepText(out *strings.Builder, atEnd bool) bool {
	i, opener := -1, ""
	for _, o := range []string{deepSeekCallsBegin, deepSeekCallBegin} {
		if j := strings.Index(p.held, o); j >= 0 && (i < 0 || j < i) {
			i, opener = j, o
		}
	}
	quiet := p.atStart || p.afterCall // whitespace here is no content
	if i >= 0 {
		if before := p.held[:i]; !quiet || strings.TrimSpace(before) != "" {
			p.release(out, before)
		}
		p.block.Reset()
		p.block.WriteString(opener)
		p.held = p.held[i+len(opener):]
		p.state = deepSeekBlock
		if opener == deepSeekCallBegin {
			p.state = deepSeekHeader
		}
		p.inBlock = 0
		return true
	}
	if atEnd {
		return false
	}
	keep := max(partialSuffix(p.held, deepSeekCallsBegin), partialSuffix(p.held, deepSeekCallBegin))
	if quiet && strings.TrimSpace(p.held[:len(p.held)-keep]) == "" {
		return false // whitespace: kept until what follows it is known
	}
	p.release(out, p.held[:len(p.held)-keep])
	p.held = p.held[len(p.held)-keep:]
	return false
}

// notACall releases the block read so far as content and reads on as text.
func (p *deepSeekCallParser) notACall(out *strings.Builder) {
	p.release(out, p.block.String())
	p.block.Reset()
	p.atStart, p.afterCall = false, false
	p.state = deepSeekText
}

func (p *deepSeekCallParser) stepBlock(out *strings.Builder, atEnd bool) bool {
	rest := strings.TrimLeft(p.held, " \t\r\n")
	p.block.WriteString(p.held[:len(p.held)-len(rest)])
	p.held = rest
	switch {
	case strings.HasPrefix(rest, deepSeekCallBegin):
		p.block.WriteString(deepSeekCallBegin)
		p.held = rest[len(deepSeekCallBegin):]
		p.state = deepSeekHeader
		return true
	case strings.HasPrefix(rest, deepSeekCallsEnd):
		p.held = rest[len(deepSeekCallsEnd):]
		if p.inBlock == 0 {
			p.block.WriteString(deepSeekCallsEnd)
			p.notACall(out)
			return true
		}
		p.endBlock()
		return true
	case rest == "" || (!atEnd && (strings.HasPrefix(deepSeekCallBegin, rest) || strings.HasPrefix(deepSeekCallsEnd, rest))):
		return false
	case p.inBlock == 0:
		p.notACall(out)
		return true
	}
	p.endBlock() // text after the calls, without the block's end
	return true
}

func (p *deepSeekCallParser) endBlock() {
	p.block.Reset()
	p.state, p.afterCall, p.atStart = deepSeekText, true, false
}

// stepHeader reads "function<｜tool▁sep｜>NAME\n".
func (p *deepSeekCallParser) stepHeader(out *strings.Builder) bool {
	nl := strings.IndexByte(p.held, '\n')
	if nl < 0 {
		if len(p.held) > deepSeekMaxHeader {
			p.notACall(out)
			return true
		}
		return false
	}
	line := p.held[:nl]
	sep := strings.Index(line, deepSeekSep)
	if sep < 0 || sep+len(deepSeekSep) == len(line) || len(line) > deepSeekMaxHeader {
		p.notACall(out)
		return true
	}
	p.name = line[sep+len(deepSeekSep):]
	p.block.WriteString(p.held[:nl+1])
	p.held = p.held[nl+1:]
	p.state = deepSeekFence
	return true
}

// stepFence reads the code fence's opening ("```json\n") up to the
// arguments' '{'; a fence is optional.
func (p *deepSeekCallParser) stepFence(out *strings.Builder, calls *[]CallDelta) bool {
	s := strings.TrimLeft(p.held, " \t\r\n")
	if strings.HasPrefix(s, "```") {
		s = strings.TrimLeft(s[3:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
		s = strings.TrimLeft(s, " \t\r\n")
	}
	switch {
	case s != "" && s[0] == '{':
	case len(p.held) > deepSeekMaxHeader:
		p.notACall(out)
		return true
	case s == "" || strings.HasPrefix("```", strings.TrimLeft(p.held, " \t\r\n")):
		return false // the fence may go on
	default:
		p.notACall(out)
		return true
	}
	p.block.WriteString(p.held[:len(p.held)-len(s)])
	p.held = s
	*calls = append(*calls, CallDelta{Index: p.calls, ID: newCallID(false), Name: p.name})
	p.args.Reset()
	p.scanner = jsonScanner{}
	p.state = deepSeekArgs
	return true
}

// stepArgs sends the arguments as they come, up to the end of their
// object.
func (p *deepSeekCallParser) stepArgs(calls *[]CallDelta) bool {
	n, complete := 0, false
	for n < len(p.held) && !complete {
		complete = p.scanner.feed(p.held[n])
		n++
	}
	if n > 0 {
		p.args.WriteString(p.held[:n])
		*calls = append(*calls, CallDelta{Index: p.calls, Arguments: p.held[:n]})
		p.held = p.held[n:]
	}
	if !complete {
		return false
	}
	*calls = p.endCall(*calls, true)
	if p.single {
		p.done = true
		return false
	}
	p.state = deepSeekCallTail
	return true
}

func (p *deepSeekCallParser) endCall(calls []CallDelta, whole bool) []CallDelta {
	if whole {
		for _, t := range p.tools {
			if t.Name == p.name {
				if problem := CheckArguments(p.args.String(), t.Parameters); problem != "" {
					p.problems = append(p.problems, fmt.Sprintf("call %d to %q: %s", p.calls, p.name, problem))
				}
				break
			}
		}
		if !p.declared(p.name) {
			p.problems = append(p.problems, fmt.Sprintf("call %d to %q: the request declares no tool of that name", p.calls, p.name))
		}
	}
	p.calls++
	p.inBlock++
	p.block.Reset()
	return append(calls, CallDelta{Index: p.calls - 1, Done: true})
}

func (p *deepSeekCallParser) declared(name string) bool {
	for _, t := range p.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// stepTail drops what closes a call: the fence's end and
// <｜tool▁call▁end｜>, either of which a model may leave out.
func (p *deepSeekCallParser) stepTail(atEnd bool) bool {
	s := strings.TrimLeft(p.held, " \t\r\n`")
	switch {
	case strings.HasPrefix(s, deepSeekCallEnd):
		s = s[len(deepSeekCallEnd):]
	case s == "" || (!atEnd && strings.HasPrefix(deepSeekCallEnd, s)):
		if atEnd {
			p.held, p.state = "", deepSeekBlock
			return true
		}
		return false
	}
	p.held = s
	p.state = deepSeekBlock
	return true
}
