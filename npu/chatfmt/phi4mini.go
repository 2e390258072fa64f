package chatfmt

import "strings"

// Phi4Mini is the format of Phi-4-mini (and Phi-4-mini-reasoning): the
// calls of an answer in one JSON array between special tokens,
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]<|/tool_call|>
//
// or after functools; the tags are special tokens, so a JSON array that
// opens the answer counts too. Its template reads the tools from the
// system message. Phi-4-mini-reasoning reasons between <think> and
// </think>.
type Phi4Mini struct{}

func (Phi4Mini) syntax() jsonSyntax {
	return jsonSyntax{openers: []string{"<|tool_call|>", "functools"}, closers: []string{"<|/tool_call|>"}, bare: true}
}

// Name implements Family.
func (Phi4Mini) Name() string { return "phi4mini" }

// Recognise implements Family: the template knows <|tool_call|>,
// functools or <|tool|>, or the architecture is Phi's.
func (Phi4Mini) Recognise(template, modelType string) Match {
	switch {
	case strings.Contains(template, "<|tool_call|>") || strings.Contains(template, "functools") || strings.Contains(template, "<|tool|>"):
		return TemplateMatch
	case strings.HasPrefix(modelType, "phi"):
		return ArchitectureMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (f Phi4Mini) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family.
func (Phi4Mini) NewReasoningSplitter() ReasoningSplitter { return NewThinkTags(ThinkOpen, ThinkClose) }

// WriteCalls implements Family.
func (Phi4Mini) WriteCalls(calls []Call) string {
	return "<|tool_call|>" + jsonCallArray(calls, "arguments") + "<|/tool_call|>"
}

// ToolsInSystemMessage implements Family: Phi-4-mini's template reads the
// tools from the system message, as a JSON string.
func (Phi4Mini) ToolsInSystemMessage() bool { return true }

// phi4MiniTemplateSHA256 is the SHA-256 of microsoft/Phi-4-mini-instruct's
// published template (testdata/chattemplates).
const phi4MiniTemplateSHA256 = "febf589225c9728ab791f52e8897d7607a823d45368f0a4c92fa68997b40cce9"

// Templates implements the renderer contract: Phi-4-mini's published
// template. It renders no tools of its own (it reads them from a system
// message's "tools", which npud does not give it), no calls and no tool
// results, so GenAI's minja rewrites them for it first (minjaPolyfills):
// the tools and an example call in the system message, calls and results
// as JSON text.
func (Phi4Mini) Templates() []Template {
	return []Template{{Name: "phi4-mini", SHA256: []string{phi4MiniTemplateSHA256}, Renderer: minjaPolyfills{render: phi4MiniRender}}}
}

// phi4MiniRender is Phi-4-mini's template on the rewritten messages.
func phi4MiniRender(msgs []plainMessage, addGenerationPrompt bool, s Specials) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|" + m.Role + "|>" + m.Content + "<|end|>")
	}
	if addGenerationPrompt {
		b.WriteString("<|assistant|>")
	} else {
		b.WriteString(s.EOS)
	}
	return b.String(), nil
}
