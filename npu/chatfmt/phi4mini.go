package chatfmt

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
// template. It reads the tools from the system message's "tools", a JSON
// string, and writes them between <|tool|> and <|/tool|>, the form the
// model was trained on; npud gives them so (phi4MiniTools), as it gave them
// to GenAI before it rendered prompts itself. The template renders no
// calls and no tool results, so those are rewritten first as GenAI's minja
// rewrites them (minjaPolyfills): JSON text.
func (Phi4Mini) Templates() []Template {
	return []Template{{Name: "phi4-mini", SHA256: []string{phi4MiniTemplateSHA256}, Renderer: phi4MiniTools{}}}
}

// phi4MiniDefaultSystem is the system message npud adds when tools are
// declared without one: the template reads the tools from it.
const phi4MiniDefaultSystem = "You are a helpful assistant with some tools."

// phi4MiniTools renders Phi-4-mini's template with the tools in the system
// message: each tool's function object, keys as the client sent them, in
// a JSON list as Python's json.dumps writes it (the form of the model
// card's example).
type phi4MiniTools struct{}

// Render implements Renderer.
func (phi4MiniTools) Render(c Conversation) (string, error) {
	tools := c.Tools
	c.Tools = nil
	msgs, err := minjaPolyfills{render: phi4MiniRender}.messages(c)
	if err != nil || len(tools) == 0 {
		if err != nil {
			return "", err
		}
		return phi4MiniRender(msgs, c.AddGenerationPrompt, c.Specials)
	}
	list := make([]string, 0, len(tools))
	for i, raw := range tools {
		var tool struct {
			Function json.RawMessage `json:"function"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil || len(tool.Function) == 0 {
			return "", fmt.Errorf("tool %d: not a function tool", i)
		}
		fn, err := ToJSON(tool.Function)
		if err != nil {
			return "", fmt.Errorf("tool %d: %w", i, err)
		}
		list = append(list, fn)
	}
	if len(msgs) == 0 || msgs[0].Role != "system" {
		msgs = append([]plainMessage{{Role: "system", Content: phi4MiniDefaultSystem}}, msgs...)
	}
	var b strings.Builder
	b.WriteString("<|system|>" + msgs[0].Content + "<|tool|>[" + strings.Join(list, ", ") + "]<|/tool|><|end|>")
	rest, err := phi4MiniRender(msgs[1:], c.AddGenerationPrompt, c.Specials)
	if err != nil {
		return "", err
	}
	return b.String() + rest, nil
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
