package chatfmt

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// The SHA-256 of the published templates Hermes renders
// (testdata/chattemplates): Qwen/Qwen2.5-3B-Instruct's, which every
// Qwen2.5 instruct model ships, and Qwen/Qwen3-1.7B's, which the Qwen3
// models share. openvino_tokenizers stores a Hugging Face tokenizer's
// chat_template in the tokenizer IR's rt_info as it is, so an exported
// model carries the same text.
const (
	qwen25TemplateSHA256 = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
	qwen3TemplateSHA256  = "a55ee1b1660128b7098723e0abcd92caa0788061051c62d51cbe87d9cf1974d8"
)

// Templates implements the renderer registry (render.go): Qwen2.5's and
// Qwen3's templates.
func (Hermes) Templates() []Template {
	return []Template{
		{Name: "qwen2.5", SHA256: []string{qwen25TemplateSHA256}, Renderer: qwen25Renderer{}},
		{Name: "qwen3", SHA256: []string{qwen3TemplateSHA256}, Renderer: qwen3Renderer{}},
	}
}

// The text both Qwen templates write around the declared tools.
const (
	qwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
	qwenToolsHeader   = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	qwenToolsFooter = "\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": " +
		"<args-json-object>}\n</tool_call><|im_end|>\n"
)

// errQwenNoMessages: both Qwen templates read messages[0], which minja refuses
// when there is none.
var errQwenNoMessages = &TemplateError{Message: "the template reads messages[0] and the conversation has no messages"}

// errEmptyPrompt: GenAI refuses a template's rendering that is empty
// (tokenizer_impl.cpp, apply_chat_template), as when a conversation holds
// only roles a template skips.
var errEmptyPrompt = &TemplateError{Message: "the template rendered nothing for this conversation"}

// writeQwenTools writes the tools block of the system message: one tool a
// line, each through tojson.
func writeQwenTools(b *strings.Builder, tools []json.RawMessage) error {
	b.WriteString(qwenToolsHeader)
	for _, t := range tools {
		text, err := ToJSON(t)
		if err != nil {
			return fmt.Errorf("a declared tool: %w", err)
		}
		b.WriteString("\n" + text)
	}
	b.WriteString(qwenToolsFooter)
	return nil
}

// writeQwenCall writes one call as both templates do; args is the
// arguments as the template prints them.
func writeQwenCall(b *strings.Builder, c Call, args string) {
	b.WriteString("<tool_call>\n{\"name\": \"" + c.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
}

// writeQwenToolResult writes a tool result: consecutive results share one
// user turn.
func writeQwenToolResult(b *strings.Builder, msgs []Message, i int, content string) {
	if i == 0 || msgs[i-1].Role != "tool" {
		b.WriteString("<|im_start|>user")
	}
	b.WriteString("\n<tool_response>\n" + content + "\n</tool_response>")
	if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
		b.WriteString("<|im_end|>\n")
	}
}

// qwen25Renderer renders Qwen2.5's template. The template prints the
// arguments through tojson; GenAI's minja finds that it wants them as an
// object and parses arguments given as a string first (its
// polyfill_object_arguments), so any JSON text is printed as its value and
// other text as a quoted string.
type qwen25Renderer struct{}

func (qwen25Renderer) Render(c Conversation) (string, error) {
	msgs := c.Messages
	if len(msgs) == 0 {
		return "", errQwenNoMessages
	}
	var b strings.Builder
	if len(c.Tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if msgs[0].Role == "system" {
			b.WriteString(msgs[0].Content)
		} else {
			b.WriteString(qwenDefaultSystem)
		}
		b.WriteString("\n\n")
		if err := writeQwenTools(&b, c.Tools); err != nil {
			return "", err
		}
	} else if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	} else {
		b.WriteString("<|im_start|>system\n" + qwenDefaultSystem + "<|im_end|>\n")
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0) || (m.Role == "assistant" && len(m.ToolCalls) == 0):
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			b.WriteString("<|im_start|>assistant")
			if m.Content != "" {
				b.WriteString("\n" + m.Content)
			}
			for _, call := range m.ToolCalls {
				args, err := ToJSON([]byte(call.Arguments))
				if err != nil {
					var s strings.Builder
					writeJSONString(&s, call.Arguments)
					args = s.String()
				}
				b.WriteString("\n")
				writeQwenCall(&b, call, args)
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			writeQwenToolResult(&b, msgs, i, m.Content)
		}
	}
	if c.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// qwen3Renderer renders Qwen3's template (arguments that hold a JSON
// string are printed as that string, any other JSON through tojson): the reasoning of the assistant
// messages after the last user query (a tool-calling turn) is kept, from
// ReasoningContent or the <think> block of the content; earlier messages
// lose it; enable_thinking false closes an empty <think> block in the
// generation prompt.
type qwen3Renderer struct{}

func (qwen3Renderer) Render(c Conversation) (string, error) {
	msgs := c.Messages
	if len(msgs) == 0 {
		return "", errQwenNoMessages
	}
	var b strings.Builder
	if len(c.Tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if msgs[0].Role == "system" {
			b.WriteString(msgs[0].Content + "\n\n")
		}
		if err := writeQwenTools(&b, c.Tools); err != nil {
			return "", err
		}
	} else if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		content := m.Content
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString("<|im_start|>" + m.Role + "\n" + content + "<|im_end|>\n")
		case m.Role == "assistant":
			reasoning := m.ReasoningContent
			if reasoning == "" && strings.Contains(content, ThinkClose) {
				before := strings.TrimRight(content[:strings.Index(content, ThinkClose)], "\n")
				if j := strings.LastIndex(before, ThinkOpen); j >= 0 {
					reasoning = strings.TrimLeft(before[j+len(ThinkOpen):], "\n")
				} else {
					reasoning = strings.TrimLeft(before, "\n")
				}
				content = strings.TrimLeft(content[strings.LastIndex(content, ThinkClose)+len(ThinkClose):], "\n")
			}
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>assistant\n" + content)
			}
			for j, call := range m.ToolCalls {
				if j > 0 || content != "" {
					b.WriteString("\n")
				}
				args := templateArguments(call.Arguments)
				text := args.text // a string is printed as it is
				if args.kind != minjaString {
					var err error
					if text, err = ToJSON([]byte(call.Arguments)); err != nil {
						return "", err
					}
				}
				writeQwenCall(&b, call, text)
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			writeQwenToolResult(&b, msgs, i, content)
		}
	}
	if c.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if c.Think != nil && !*c.Think {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	if b.Len() == 0 {
		return "", errEmptyPrompt
	}
	return b.String(), nil
}
