package chatfmt

import "strings"

// Hermes is the format of Qwen 2.5 and 3, Hermes and the models trained on
// their template: one block per call,
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Oslo"}}
//	</tool_call>
//
// and the reasoning of Qwen3 (and QwQ) between <think> and </think> at the
// start of the answer.
type Hermes struct{}

func (Hermes) syntax() jsonSyntax {
	return jsonSyntax{openers: []string{"<tool_call>"}, closers: []string{"</tool_call>"}}
}

// Name implements Family.
func (Hermes) Name() string { return "hermes" }

// Recognise implements Family: the template writes <tool_call>, or the
// architecture is Qwen's.
func (Hermes) Recognise(template, modelType string) Match {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return TemplateMatch
	case strings.HasPrefix(modelType, "qwen"):
		return ArchitectureMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (f Hermes) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family.
func (Hermes) NewReasoningSplitter() ReasoningSplitter { return NewThinkTags(ThinkOpen, ThinkClose) }

// WriteCalls implements Family.
func (Hermes) WriteCalls(calls []Call) string {
	blocks := make([]string, len(calls))
	for i, c := range calls {
		blocks[i] = "<tool_call>\n" + jsonCall(c, "arguments") + "\n</tool_call>"
	}
	return strings.Join(blocks, "\n")
}

// ToolsInSystemMessage implements Family.
func (Hermes) ToolsInSystemMessage() bool { return false }
