package chatfmt

import "strings"

// Gemma3 is the format of Gemma 3's instruct models. Their template
// renders no tools, calls or tool results, so GenAI's minja rewrites them
// into the conversation (minjaPolyfills) and the template writes no call
// syntax of its own: Recognise does not find the family for a model
// (chatfmt.Recognise wants a template that renders tools), only its
// template's renderer is found, by its hash (RendererFor). Should a model
// be run as the family, it answers with calls as a bare JSON array of
// {"name", "arguments"} objects opening the answer, as the other JSON
// families' parsers read them. Gemma 3 writes no reasoning apart from its
// answer.
type Gemma3 struct{}

func (Gemma3) syntax() jsonSyntax { return jsonSyntax{bare: true} }

// Name implements Family.
func (Gemma3) Name() string { return "gemma3" }

// Recognise implements Family: the template has Gemma's turns.
func (Gemma3) Recognise(template, _ string) Match {
	if strings.Contains(template, "<start_of_turn>") {
		return TemplateMatch
	}
	return NoMatch
}

// NewCallParser implements Family.
func (f Gemma3) NewCallParser(opts ParserOptions) CallParser {
	return newJSONCallParser(f.syntax(), opts)
}

// NewReasoningSplitter implements Family: none.
func (Gemma3) NewReasoningSplitter() ReasoningSplitter { return nil }

// WriteCalls implements Family.
func (Gemma3) WriteCalls(calls []Call) string { return jsonCallArray(calls, "arguments") }

// ToolsInSystemMessage implements Family.
func (Gemma3) ToolsInSystemMessage() bool { return false }

// gemma3TemplateSHA256 is the SHA-256 of google/gemma-3-1b-it's published
// template (testdata/chattemplates).
const gemma3TemplateSHA256 = "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4"

// Templates implements the renderer contract: Gemma 3's published
// template, through minja's polyfills (its template fails on an
// assistant's null content, so the example call shows "content": "").
func (Gemma3) Templates() []Template {
	return []Template{{Name: "gemma3", SHA256: []string{gemma3TemplateSHA256},
		Renderer: minjaPolyfills{render: gemma3Render, nonNullContent: true}}}
}

// gemma3Render is Gemma 3's template on the rewritten messages: the system
// message opens the first turn, the assistant is the "model", every
// content trimmed.
func gemma3Render(msgs []plainMessage, addGenerationPrompt bool, s Specials) (string, error) {
	if len(msgs) == 0 {
		return "", errNoMessages
	}
	loop, firstPrefix := msgs, ""
	if msgs[0].Role == "system" {
		loop, firstPrefix = msgs[1:], msgs[0].Content+"\n\n"
	}
	var b strings.Builder
	b.WriteString(s.BOS)
	for i, m := range loop {
		if (m.Role == "user") != (i%2 == 0) {
			return "", &TemplateError{Message: "Conversation roles must alternate user/assistant/user/assistant/..."}
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		b.WriteString("<start_of_turn>" + role + "\n")
		if i == 0 {
			b.WriteString(firstPrefix)
		}
		b.WriteString(minjaTrim(m.Content) + "<end_of_turn>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<start_of_turn>model\n")
	}
	return b.String(), nil
}
