package chatfmt

import (
	"fmt"
	"strings"
)

// plainMessage is a message as minja hands it to a template that renders
// no tools, tool calls or tool responses, once it has rewritten them
// (its polyfills): a role and a text.
type plainMessage struct {
	Role, Content string
}

// plainRender renders a template on rewritten messages, as minja's
// chat_template::apply renders its template.
type plainRender func(msgs []plainMessage, addGenerationPrompt bool, s Specials) (string, error)

// minjaPolyfills rewrite a conversation as GenAI's minja does
// (google/minja include/minja/chat-template.hpp, chat_template::apply)
// before a template renders it that renders none of tools, tool calls and
// tool responses and takes a system message (Phi-4-mini, Gemma 3): the
// tools, and an example of a call, go into the system message; an
// assistant's calls become its content, a JSON object of them; a tool's
// result becomes a user's message, a JSON object of it.
type minjaPolyfills struct {
	render plainRender
	// nonNullContent: the template fails on an assistant message whose
	// content is null (requires_non_null_content), so the example call's
	// message has content "" (which its JSON object shows).
	nonNullContent bool
}

// messages are the conversation's messages as the template gets them.
func (p minjaPolyfills) messages(c Conversation) ([]plainMessage, error) {
	msgs := make([]plainMessage, 0, len(c.Messages)+1)
	for _, m := range c.Messages {
		pm := plainMessage{Role: m.Role, Content: m.Content}
		if len(m.ToolCalls) > 0 {
			pm.Content = callsJSON(m.ToolCalls, m.Content, true)
		}
		if m.Role == "tool" {
			resp := jsonValue{kind: '{'}
			if m.Name != "" {
				resp.keys, resp.values = append(resp.keys, "tool"), append(resp.values, jsonString(m.Name))
			}
			resp.keys, resp.values = append(resp.keys, "content"), append(resp.values, jsonString(pm.Content))
			if m.ToolCallID != "" {
				resp.keys, resp.values = append(resp.keys, "tool_call_id"), append(resp.values, jsonString(m.ToolCallID))
			}
			var b strings.Builder
			nlohmannDump(&b, jsonObject("tool_response", resp), 2, 0)
			pm = plainMessage{Role: "user", Content: b.String()}
		}
		msgs = append(msgs, pm)
	}
	if len(c.Tools) == 0 {
		return msgs, nil
	}
	tools := jsonValue{kind: '['}
	for i, raw := range c.Tools {
		tool, err := parseJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		tools.values = append(tools.values, tool)
	}
	var b strings.Builder
	b.WriteString("You can call any of the following tools to satisfy the user's requests: ")
	minjaDump(&b, tools, 2, 0)
	if example := p.callExample(c.Specials); example != "" {
		b.WriteString("\n\nExample tool call syntax:\n\n" + example + "\n\n")
	}
	if len(msgs) > 0 && msgs[0].Role == "system" {
		msgs[0].Content += "\n\n" + b.String()
		return msgs, nil
	}
	return append([]plainMessage{{Role: "system", Content: b.String()}}, msgs...), nil
}

// callsJSON is an assistant's calls as minja's polyfill writes them in
// its content: {"tool_calls": [{"name", "arguments", "id"}], "content"},
// two spaces deep.
func callsJSON(calls []Call, content string, withContent bool) string {
	list := jsonValue{kind: '['}
	for _, c := range calls {
		call := jsonObject("name", jsonString(c.Name), "arguments", callArguments(c.Arguments))
		if c.ID != "" {
			call.keys, call.values = append(call.keys, "id"), append(call.values, jsonString(c.ID))
		}
		list.values = append(list.values, call)
	}
	obj := jsonObject("tool_calls", list)
	if withContent {
		obj.keys, obj.values = append(obj.keys, "content"), append(obj.values, jsonString(content))
	}
	var b strings.Builder
	nlohmannDump(&b, obj, 2, 0)
	return b.String()
}

// callExample is the example call minja shows with the tools: the text
// the template adds to a user's "Hey" for an assistant's call of
// tool_name, found as minja finds it (what follows the two renderings'
// common prefix, less an eos that ends it), "" when it finds none.
func (p minjaPolyfills) callExample(s Specials) string {
	user := plainMessage{Role: "user", Content: "Hey"}
	call := plainMessage{Role: "assistant", Content: callsJSON(
		[]Call{{ID: "call_1___", Name: "tool_name", Arguments: `{"arg1": "some_value"}`}}, "", p.nonNullContent)}
	prefix, err := p.render([]plainMessage{user}, true, s)
	if err != nil {
		return ""
	}
	full, err := p.render([]plainMessage{user, call}, false, s)
	if err != nil {
		return ""
	}
	if last := strings.LastIndex(full, s.EOS); last >= 0 &&
		(last == len(prefix)-len(s.EOS) || (strings.HasSuffix(full, "\n") && last == len(full)-len(s.EOS)-1)) {
		full = full[:last]
	}
	common := 0
	for i := 0; i < len(prefix) && i < len(full) && prefix[i] == full[i]; i++ {
		if prefix[i] != '<' { // a tag where the two part is not shared
			common = i + 1
		}
	}
	example := full[common:]
	if !strings.Contains(example, "tool_name") && !strings.Contains(example, "some_value") {
		return ""
	}
	return example
}

// Render renders the conversation through the polyfills and the template.
func (p minjaPolyfills) Render(c Conversation) (string, error) {
	msgs, err := p.messages(c)
	if err != nil {
		return "", err
	}
	return p.render(msgs, c.AddGenerationPrompt, c.Specials)
}
