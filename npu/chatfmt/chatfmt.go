// Package chatfmt holds what npud knows of each model family's text
// format, a file per family: how a model is recognised as the family's,
// how it writes its reasoning and its tool calls, and how its answer is
// read back into content, reasoning and calls as it streams in.
//
// It is a leaf: it imports nothing of npud's, so the serving runtime (which
// parses answers) and the engines (the simulated one writes calls, the
// upstream one relays them, the OpenVINO one asks a family's template
// quirks) can all use it. Its types are its own; each side converts at its
// edge.
//
// Adding a family is one file (a type implementing Family, and its name in
// Families) and its tests: see hermes.go for the shape.
package chatfmt

import (
	"encoding/json"
	"strings"
)

// Tool is a tool a request declares, as far as a parser checks the calls
// it reads against it.
type Tool struct {
	Name       string
	Parameters json.RawMessage // JSON schema of the arguments; nil: any
}

// Call is a whole tool call: what a family writes, what its parser reads
// back.
type Call struct {
	ID        string // families that write no id leave it out
	Name      string
	Arguments string // a JSON object's text
}

// CallDelta is a piece of a tool call, in the order a client assembles it
// (OpenAI's delta.tool_calls): the first piece of a call carries its ID and
// Name, the following ones further pieces of its Arguments (JSON text, as
// the model writes it), the last one Done.
type CallDelta struct {
	Index     int
	ID        string // first piece only
	Name      string // first piece only
	Arguments string
	Done      bool // the call is complete
}

// Output is what a CallParser knows of the answer after a piece of it.
type Output struct {
	Content string
	Calls   []CallDelta
}

// CallParser reads a model's answer into content and tool calls as it
// streams in, in any syntax: while what is being generated may still be a
// call, none of it is released as content; text that turns out not to be
// a call is released as it was. Not safe for concurrent use.
type CallParser interface {
	// Push takes the next text of the answer and returns what is now
	// known to be content, and the pieces of calls.
	Push(text string) Output
	// Flush ends the answer: held text is content, a call cut short ends.
	// cut says a limit ended the answer (max_tokens, the context, a
	// deadline): then a call's opener it cut in two is dropped too.
	Flush(cut bool) Output
	// Finished reports that the answer must end here (ParserOptions.Single
	// and one call made).
	Finished() bool
	// Calls is how many calls were made so far.
	Calls() int
	// Problems says what was wrong with the calls (for the access log):
	// an undeclared tool, arguments against the schema, a call cut short.
	Problems() []string
}

// ParserOptions are what a request asks of the parser.
type ParserOptions struct {
	Tools []Tool // the declared tools, which calls are checked against
	// Single: parallel tool calls are off: the answer ends with the first
	// call.
	Single bool
	// Document: the answer may be a JSON document (a structured output
	// was asked for), so bare JSON that names no declared tool is the
	// document, not a call to an undeclared tool.
	Document bool
}

// ReasoningSplitter separates a model's reasoning from its answer as it
// streams in: reasoning is never mixed into the content.
type ReasoningSplitter interface {
	// Push takes the next text and returns what is now known to be
	// reasoning and content.
	Push(text string) (reasoning, content string)
	// Flush ends the answer: what is held goes where it belongs.
	Flush() (reasoning, content string)
}

// Match is how sure a family is that a model is one of its own.
type Match int

const (
	// NoMatch: not the family's.
	NoMatch Match = iota
	// ArchitectureMatch: the template says nothing, but config.json's
	// model_type is the family's (qwen2, llama…).
	ArchitectureMatch
	// TemplateMatch: the chat template teaches the family's call syntax.
	TemplateMatch
)

// Family is one model family's text format.
type Family interface {
	// Name is the family's name, what ModelDetails.ToolFormat holds.
	Name() string
	// Recognise says whether a model whose chat template text is template
	// (what tokenizer_config.json and chat_template.jinja hold) and whose
	// config.json model_type is modelType is the family's.
	Recognise(template, modelType string) Match
	// NewCallParser returns a parser of the family's answers.
	NewCallParser(opts ParserOptions) CallParser
	// NewReasoningSplitter returns a splitter of the family's reasoning;
	// nil when the family writes none apart from its answer.
	NewReasoningSplitter() ReasoningSplitter
	// WriteCalls is the text in which a model of the family answers with
	// calls: what its parser reads back as exactly these calls.
	WriteCalls(calls []Call) string
	// ToolsInSystemMessage: the family's chat template reads the tools
	// from the system message, as a JSON string, not from its tools
	// variable (Phi-4-mini).
	ToolsInSystemMessage() bool
}

// Families are the families npud knows, in the order recognition tries
// them. Relayed comes last: no model is recognised as it.
func Families() []Family {
	return []Family{Hermes{}, Mistral{}, Llama3{}, Phi4Mini{}, Gemma3{}, DeepSeekR1{}, Relayed{}}
}

// Lookup is the family named name; nil when npud knows none of that name
// (name "": a model whose family is unknown).
func Lookup(name string) Family {
	for _, f := range Families() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// Recognise is the family of a model from its chat template text and its
// config.json model_type: the template's call syntax first (what the model
// was taught to answer with), its architecture next. nil when the
// template renders no tools, since the model would never hear of them,
// or when no family claims it.
func Recognise(template, modelType string) Family {
	if !containsTools(template) {
		return nil
	}
	for _, want := range []Match{TemplateMatch, ArchitectureMatch} {
		for _, f := range Families() {
			if f.Recognise(template, modelType) == want {
				return f
			}
		}
	}
	return nil
}

// SplitReasoning is the reasoning splitter for a model of family f: the
// family's own, one that passes everything on as content when the family
// writes no reasoning apart, and <think> tags when the family is unknown
// (nil), as reasoning models of many families (DeepSeek-R1's distills and
// others) write it.
func SplitReasoning(f Family) ReasoningSplitter {
	if f == nil {
		return NewThinkTags(ThinkOpen, ThinkClose)
	}
	if s := f.NewReasoningSplitter(); s != nil {
		return s
	}
	return noReasoning{}
}

// noReasoning is the splitter of a family that writes no reasoning apart.
type noReasoning struct{}

func (noReasoning) Push(text string) (reasoning, content string) { return "", text }
func (noReasoning) Flush() (reasoning, content string)           { return "", "" }

// containsTools reports whether a chat template renders tools at all: it
// reads its tools, or it renders calls (GenAI's minja then tells the model
// of the tools in the system message, as for DeepSeek-R1's template).
func containsTools(template string) bool {
	return strings.Contains(template, "tools") || strings.Contains(template, "tool_calls")
}
