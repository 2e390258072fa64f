package chatfmt

import "strings"

// Llama3 is the format of Llama 3.1 to 3.3: a call is a bare JSON object,
// sometimes after <|python_tag|>, several separated by ';':
//
//	{"name": "get_weather", "parameters": {"city": "Oslo"}}
//
// Llama 3 writes no reasoning apart from its answer.
type Llama3 struct{}

func (Llama3) syntax() jsonSyntax {
	return jsonSyntax{openers: []string{"<|python_tag|>"}, closers: []string{"<|eom_id|>", "<|eot_id|>"}, bare: true}
}

// Name implements Family.
func (Llama3) Name() string { return "llama3" }

// Recognise implements Family: the template knows <|python_tag|> or the
// ipython role, or the architecture is Llama's.
func (Llama3) Recognise(template, modelType string) Match {
	switch {
	case strings.Contains(template, "<|python_tag|>") || strings.Contains(template, "ipython"):
		return TemplateMatch
	case strings.HasPrefix(modelType, "llama"):
		return ArchitectureMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (f Llama3) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family: none.
func (Llama3) NewReasoningSplitter() ReasoningSplitter { return nil }

// WriteCalls implements Family, as Llama 3.2 and 3.3 answer a custom
// tool: bare objects.
func (Llama3) WriteCalls(calls []Call) string {
	objs := make([]string, len(calls))
	for i, c := range calls {
		objs[i] = jsonCall(c, "parameters")
	}
	return strings.Join(objs, "; ")
}

// ToolsInSystemMessage implements Family.
func (Llama3) ToolsInSystemMessage() bool { return false }
