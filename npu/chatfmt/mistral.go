package chatfmt

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// The SHA-256 of the templates Mistral's renderers reproduce
// (testdata/chattemplates).
const (
	mistralV03TemplateSHA256  = "e16746b40344d6c5b5265988e0328a0bf7277be86f1c335156eae07e29c82826" // mistralai/Mistral-7B-Instruct-v0.3
	mistralNemoTemplateSHA256 = "e4676cb56dffea7782fd3e2b577cfaf1e123537e6ef49b3ec7caa6c095c62272" // mistralai/Mistral-Nemo-Instruct-2407
)

// Templates implements the renderer contract: Mistral 7B v0.3's and
// Mistral Nemo's published templates.
func (Mistral) Templates() []Template {
	return []Template{
		{Name: "mistral-v0.3", SHA256: []string{mistralV03TemplateSHA256}, Renderer: mistralRenderer{spaced: true}},
		{Name: "mistral-nemo", SHA256: []string{mistralNemoTemplateSHA256}, Renderer: mistralRenderer{}},
	}
}

// The refusals of Mistral's templates.
const (
	mistralAlternate = "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."
	mistralCallID    = "Tool call IDs should be alphanumeric strings with length 9!"
	mistralRoles     = "Only user and assistant roles are supported, with the exception of an initial optional system message!"
)

// mistralRenderer renders Mistral's v0.3 and Nemo templates as GenAI
// does: the tools before the last user message, the system message in
// the last message when that is a user's, calls and results with ids of
// nine bytes. minja hands the template a call's arguments as an object;
// nothing else of the conversation changes.
type mistralRenderer struct {
	// spaced: v0.3 puts a space after [INST], [AVAILABLE_TOOLS],
	// [TOOL_CALLS] and [TOOL_RESULTS] and before an answer, which it
	// trims; Nemo does neither.
	spaced bool
}

// Render implements Renderer.
func (r mistralRenderer) Render(c Conversation) (string, error) {
	if len(c.Messages) == 0 {
		return "", errNoMessages
	}
	sp := ""
	if r.spaced {
		sp = " "
	}
	loop, system, hasSystem := c.Messages, "", false
	if loop[0].Role == "system" {
		system, hasSystem, loop = loop[0].Content, true, loop[1:]
	}
	var lastUser *Message
	turn := 0
	for i, m := range loop {
		if m.Role == "user" {
			lastUser = &loop[i]
		}
		if m.Role == "tool" || m.Role == "tool_results" || len(m.ToolCalls) > 0 {
			continue
		}
		if (m.Role == "user") != (turn%2 == 0) {
			return "", &TemplateError{Message: mistralAlternate}
		}
		turn++
	}
	var b strings.Builder
	b.WriteString(c.Specials.BOS)
	for i, m := range loop {
		switch {
		case m.Role == "user":
			if len(c.Tools) > 0 && minjaEqualMessages(m, *lastUser) {
				if err := r.writeTools(&b, c.Tools); err != nil {
					return "", err
				}
			}
			if i == len(loop)-1 && hasSystem {
				b.WriteString("[INST]" + sp + system + "\n\n" + m.Content + "[/INST]")
			} else {
				b.WriteString("[INST]" + sp + m.Content + "[/INST]")
			}
		case len(m.ToolCalls) > 0:
			b.WriteString("[TOOL_CALLS]" + sp + "[")
			for j, call := range m.ToolCalls {
				// The call's function through tojson, less its closing brace.
				b.WriteString(`{"name": `)
				writeJSONString(&b, call.Name)
				b.WriteString(`, "arguments": `)
				minjaDump(&b, callArguments(call.Arguments), -1, 0)
				if len(call.ID) != 9 {
					return "", &TemplateError{Message: mistralCallID}
				}
				b.WriteString(`, "id": "` + call.ID + `"}`)
				if j < len(m.ToolCalls)-1 {
					b.WriteString(", ")
				} else {
					b.WriteString("]" + c.Specials.EOS)
				}
			}
		case m.Role == "assistant":
			if r.spaced {
				b.WriteString(" " + minjaTrim(m.Content) + c.Specials.EOS)
			} else {
				b.WriteString(m.Content + c.Specials.EOS)
			}
		case m.Role == "tool_results" || m.Role == "tool":
			b.WriteString("[TOOL_RESULTS]" + sp + `{"content": ` + m.Content + ", ")
			if len(m.ToolCallID) != 9 {
				return "", &TemplateError{Message: mistralCallID}
			}
			b.WriteString(`"call_id": "` + m.ToolCallID + `"}[/TOOL_RESULTS]`)
		default:
			return "", &TemplateError{Message: mistralRoles}
		}
	}
	return b.String(), nil
}

// writeTools writes the tools as the templates do: each function's keys
// but "return" in their order, a string value between quotes as it is
// (not escaped), any other through tojson.
func (r mistralRenderer) writeTools(b *strings.Builder, tools []json.RawMessage) error {
	b.WriteString("[AVAILABLE_TOOLS]")
	if r.spaced {
		b.WriteString(" ")
	}
	b.WriteString("[")
	for i, raw := range tools {
		tool, err := parseJSON(raw)
		if err != nil {
			return fmt.Errorf("tool %d: %w", i, err)
		}
		fn, ok := tool.field("function")
		if !ok || fn.kind != '{' {
			return fmt.Errorf("tool %d: no function object", i)
		}
		b.WriteString(`{"type": "function", "function": {`)
		n := 0
		for k, key := range fn.keys {
			if key == "return" {
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			if val := fn.values[k]; val.kind == '"' {
				b.WriteString(`"` + key + `": "` + val.text + `"`)
			} else {
				b.WriteString(`"` + key + `": `)
				minjaDump(b, val, -1, 0)
			}
		}
		b.WriteString("}}")
		if i < len(tools)-1 {
			b.WriteString(", ")
		} else {
			b.WriteString("]")
		}
	}
	b.WriteString("[/AVAILABLE_TOOLS]")
	return nil
}
