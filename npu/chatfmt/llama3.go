package chatfmt

import (
	"fmt"
	"strings"
	"time"
)

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

// The SHA-256 of the templates Llama3's renderers reproduce
// (testdata/chattemplates).
const (
	llama31TemplateSHA256 = "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65" // meta-llama/Llama-3.1-8B-Instruct
	llama32TemplateSHA256 = "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4" // meta-llama/Llama-3.2-3B-Instruct
)

// Templates implements the renderer contract: Llama 3.1's and 3.2's
// published templates.
func (Llama3) Templates() []Template {
	return []Template{
		{Name: "llama3.1", SHA256: []string{llama31TemplateSHA256}, Renderer: llama3Renderer{}},
		{Name: "llama3.2", SHA256: []string{llama32TemplateSHA256}, Renderer: llama3Renderer{datedToday: true}},
	}
}

// llama3Renderer renders Llama 3.1's and 3.2's templates as GenAI does,
// given neither date_string nor builtin_tools nor custom_tools (so the
// tools go into the first user message, and 3.1's ipython mode is off).
// minja hands the template a call's arguments as an object (the
// template prints them with tojson), and nothing else of the
// conversation changes: the templates render tools, calls and results.
type llama3Renderer struct {
	// datedToday: the template writes the day of Conversation.Now
	// (3.2's strftime_now), not 3.1's fixed "26 Jul 2024".
	datedToday bool
}

// Render implements Renderer.
func (r llama3Renderer) Render(c Conversation) (string, error) {
	if len(c.Messages) == 0 {
		return "", errNoMessages
	}
	date := "26 Jul 2024"
	if r.datedToday {
		now := c.Now
		if now.IsZero() {
			now = time.Now()
		}
		date = now.Format("02 Jan 2006") // strftime "%d %b %Y"
	}
	msgs := c.Messages
	system := ""
	if msgs[0].Role == "system" {
		system = minjaTrim(msgs[0].Content)
		msgs = msgs[1:]
	}
	var b strings.Builder
	b.WriteString(c.Specials.BOS)
	b.WriteString("<|start_header_id|>system<|end_header_id|>\n\n")
	if len(c.Tools) > 0 {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n")
	b.WriteString(system + "<|eot_id|>")
	if len(c.Tools) > 0 {
		if len(msgs) == 0 {
			return "", &TemplateError{Message: "Cannot put tools in the first user message when there's no first user message!"}
		}
		first := minjaTrim(msgs[0].Content)
		msgs = msgs[1:]
		b.WriteString("<|start_header_id|>user<|end_header_id|>\n\n" +
			"Given the following functions, please respond with a JSON for a function call " +
			"with its proper arguments that best answers the given prompt.\n\n" +
			`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` +
			"Do not use variables.\n\n")
		for i, raw := range c.Tools {
			tool, err := parseJSON(raw)
			if err != nil {
				return "", fmt.Errorf("tool %d: %w", i, err)
			}
			minjaDump(&b, tool, 4, 0)
			b.WriteString("\n\n")
		}
		b.WriteString(first + "<|eot_id|>")
	}
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return "", &TemplateError{Message: "This model only supports single tool-calls at once!"}
			}
			call := m.ToolCalls[0]
			b.WriteString(`<|start_header_id|>assistant<|end_header_id|>` + "\n\n" + `{"name": "` + call.Name + `", "parameters": `)
			minjaDump(&b, callArguments(call.Arguments), -1, 0)
			b.WriteString("}<|eot_id|>")
		case m.Role == "tool" || m.Role == "ipython":
			// A string is iterable to the template: it goes through tojson.
			b.WriteString("<|start_header_id|>ipython<|end_header_id|>\n\n")
			writeJSONString(&b, m.Content)
			b.WriteString("<|eot_id|>")
		default:
			b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + minjaTrim(m.Content) + "<|eot_id|>")
		}
	}
	if c.AddGenerationPrompt {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String(), nil
}
