package chatfmt

import "strings"

// Mistral is the format of Mistral's instruct models: the calls of an
// answer in one JSON array after [TOOL_CALLS],
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}]
//
// [TOOL_CALLS] is a special token that GenAI's detokenizer usually drops,
// so a JSON array that opens the answer counts too. Its template insists
// on call ids of nine alphanumeric characters. Magistral reasons between
// <think> and </think>.
type Mistral struct{}

func (Mistral) syntax() jsonSyntax {
	return jsonSyntax{openers: []string{"[TOOL_CALLS]"}, bare: true, shortIDs: true}
}

// Name implements Family.
func (Mistral) Name() string { return "mistral" }

// Recognise implements Family: the template writes [TOOL_CALLS], or the
// architecture is Mistral's.
func (Mistral) Recognise(template, modelType string) Match {
	switch {
	case strings.Contains(template, "[TOOL_CALLS]"):
		return TemplateMatch
	case strings.HasPrefix(modelType, "mistral"):
		return ArchitectureMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (f Mistral) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family.
func (Mistral) NewReasoningSplitter() ReasoningSplitter { return NewThinkTags(ThinkOpen, ThinkClose) }

// WriteCalls implements Family.
func (Mistral) WriteCalls(calls []Call) string {
	return "[TOOL_CALLS]" + jsonCallArray(calls, "arguments")
}

// ToolsInSystemMessage implements Family.
func (Mistral) ToolsInSystemMessage() bool { return false }
