package openaiapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/openaichat"
	"github.com/npud/npud/wire/reqinfo"
)

// responsesRequest is the body of POST /v1/responses. It is checked here
// and then translated into a chat request, so that the Responses API runs
// through the same validation, router, bridge and relay as chat
// completions. Unknown fields are ignored; known ones npud cannot honour
// are refused.
type responsesRequest struct {
	Model              string             `json:"model"`
	Input              json.RawMessage    `json:"input"`
	Instructions       *string            `json:"instructions"`
	Tools              []responsesTool    `json:"tools"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	Reasoning          *responseReasoning `json:"reasoning"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	Metadata           map[string]string  `json:"metadata"`
	User               string             `json:"user"`
	Stream             bool               `json:"stream"`
	Store              *bool              `json:"store"`
	PreviousResponseID string             `json:"previous_response_id"`
	Text               *responseText      `json:"text"`
	Background         bool               `json:"background"`
	Truncation         string             `json:"truncation"`
	Conversation       json.RawMessage    `json:"conversation"`
	Prompt             json.RawMessage    `json:"prompt"`
	TopLogprobs        *int               `json:"top_logprobs"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	ServiceTier        string             `json:"service_tier"`
	PromptCacheKey     string             `json:"prompt_cache_key"`

	// origins names, for each chat message the request became, what it
	// came from (input[3], instructions, previous_response_id), so that an
	// error of the shared validation names the client's field.
	origins []string

	// Extensions shared with chat completions.
	Seed      *int64   `json:"seed"`
	TopK      *int     `json:"top_k"`
	Stop      stopList `json:"stop"`
	TimeoutMS *int64   `json:"timeout_ms"`
}

// ModelName is the model the request asks for (reqinfo.Named).
func (r *responsesRequest) ModelName() string { return r.Model }

// responseText is the request's text: its format, a structured output
// flat in text.format ({"type":"json_schema","name":…,"schema":…}).
type responseText struct {
	Format *struct {
		Type        string          `json:"type"`
		Name        string          `json:"name,omitempty"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"format"`
}

// responseFormat is text.format as chat's response_format; a bad one is
// refused by chat's validation, which names text.format's fields
// (renamed).
func (r *responsesRequest) responseFormat() *openaiwire.ResponseFormat {
	if r.Text == nil || r.Text.Format == nil {
		return nil
	}
	f := r.Text.Format
	out := &openaiwire.ResponseFormat{Type: f.Type}
	if f.Type == "json_schema" {
		out.JSONSchema = &openaiwire.JSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
	}
	return out
}

type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// responsesTool is a tool of the Responses API: functions are flat
// ({"type":"function","name":…}), unlike chat's nested function object.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// Bounds of what one request may carry, beyond the body limit.
const (
	maxMetadataPairs   = 16 // OpenAI's limits
	maxMetadataKey     = 64
	maxMetadataValue   = 512
	maxInputItems      = 4096
	maxResponseIDChars = 128
)

// inputItem is one item of `input`: a message (with or without
// "type":"message"), a function call of an earlier turn, a call's output,
// or a reasoning item.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// function_call and function_call_output
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	ID        string          `json:"id"`
	Namespace string          `json:"namespace"`
}

// inputPart is a part of a message's content.
type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
}

// rename maps a chat request's parameter names to the Responses API's, so
// an error from the shared validation names the field the client sent.
var rename = map[string]string{
	"max_completion_tokens": "max_output_tokens",
	"reasoning_effort":      "reasoning.effort",
	"messages":              "input",
}

func (r *responsesRequest) renamed(e *Error) *Error {
	if e == nil {
		return nil
	}
	name := e.Param
	// response_format.json_schema's fields are text.format's own.
	for _, from := range []string{"response_format.json_schema", "response_format"} {
		if name == from || strings.HasPrefix(name, from+".") {
			out := *e
			out.Param = "text.format" + strings.TrimPrefix(name, from)
			out.Message = strings.ReplaceAll(out.Message, "'"+from, "'text.format")
			return &out
		}
	}
	if m := messageParam.FindStringSubmatch(name); m != nil {
		if i, err := strconv.Atoi(m[1]); err == nil && i < len(r.origins) {
			out := *e
			out.Param = r.origins[i] + m[2]
			out.Message = strings.ReplaceAll(out.Message, "messages["+m[1]+"]", r.origins[i])
			return &out
		}
	}
	for from, to := range rename {
		if name == from || strings.HasPrefix(name, from+".") {
			out := *e
			out.Param = to + strings.TrimPrefix(name, from)
			out.Message = strings.ReplaceAll(out.Message, "'"+from+"'", "'"+to+"'")
			return &out
		}
	}
	return e
}

// messageParam is a chat message's parameter name: messages[N] and what
// follows.
var messageParam = regexp.MustCompile(`^messages\[(\d+)\](.*)$`)

// checkUnsupported refuses what npud cannot do rather than dropping it.
func (r *responsesRequest) checkUnsupported() *Error {
	no := func(param, why string) *Error {
		return invalid(param, "unsupported_parameter", "'%s' is not supported: %s", param, why)
	}
	switch {
	case r.Background:
		return no("background", "responses run in the foreground; stream them instead")
	case isSet(r.Conversation):
		return no("conversation", "use 'previous_response_id' to continue a conversation")
	case isSet(r.Prompt):
		return no("prompt", "prompt templates are not stored here; send 'input' and 'instructions'")
	case r.TopLogprobs != nil && *r.TopLogprobs != 0:
		return no("top_logprobs", openaichat.NoLogprobs)
	case r.Truncation != "" && r.Truncation != "disabled":
		return invalid("truncation", "unsupported_value", "'truncation' must be \"disabled\": npud does not drop parts of a conversation, got %q", reqinfo.Clip(r.Truncation))
	case r.MaxToolCalls != nil:
		return no("max_tool_calls", "use 'parallel_tool_calls': false for at most one call")
	}
	if len(r.Metadata) > maxMetadataPairs {
		return invalid("metadata", "invalid_value", "'metadata' has %d pairs: at most %d are allowed", len(r.Metadata), maxMetadataPairs)
	}
	for k, v := range r.Metadata {
		if len(k) > maxMetadataKey || len(v) > maxMetadataValue {
			return invalid("metadata", "invalid_value", "'metadata' keys are at most %d characters and values at most %d", maxMetadataKey, maxMetadataValue)
		}
	}
	if len(r.PreviousResponseID) > maxResponseIDChars {
		return invalid("previous_response_id", "invalid_value", "'previous_response_id' is longer than %d characters", maxResponseIDChars)
	}
	return nil
}

// ignoredTools are tool types left out of what the model is told rather
// than refused: Codex CLI sends them with every request (web_search with
// external_web_access false, and a namespace of sub-agent functions), so
// refusing them would refuse Codex. The model cannot call a hosted search
// npud does not run, and a namespaced call would need a namespace field on
// the call that npud's tool-call parsers cannot give.
var ignoredTools = map[string]bool{"web_search": true, "web_search_preview": true, "namespace": true}

// tools translates the function tools into chat's shape. Other hosted
// tools (file search, computer use, code interpreter, MCP, image
// generation, local shell, custom/freeform) need something npud does not
// run: each is a 400 naming its type.
func (r *responsesRequest) tools() ([]toolDef, *Error) {
	if len(r.Tools) > openaichat.MaxTools {
		return nil, invalid("tools", "invalid_value", "'tools' has %d tools: at most %d are allowed", len(r.Tools), openaichat.MaxTools)
	}
	out := make([]toolDef, 0, len(r.Tools))
	for i, t := range r.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if ignoredTools[t.Type] {
			continue
		}
		if t.Type != "function" {
			return nil, invalid(param+".type", "unsupported_value",
				"%s.type %q is not supported: npud runs only tools of type \"function\", which the client executes", param, reqinfo.Clip(t.Type))
		}
		if isSet(t.Parameters) && t.Parameters[0] != '{' {
			return nil, invalid(param+".parameters", "invalid_type", "%s.parameters must be a JSON schema object", param)
		}
		var d toolDef
		d.Type = "function"
		d.Function = &openaiwire.Function{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}
		out = append(out, d)
	}
	return out, nil
}

// toolChoice translates tool_choice: "auto", "none", "required", or
// {"type":"function","name":…} into chat's shape.
func (r *responsesRequest) toolChoice() (json.RawMessage, *Error) {
	if !isSet(r.ToolChoice) {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(r.ToolChoice, &mode) == nil {
		return r.ToolChoice, nil // chat's validation names a bad mode
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.ToolChoice, &named); err != nil || named.Type != "function" {
		return nil, invalid("tool_choice", "invalid_value",
			`'tool_choice' must be "auto", "none", "required" or {"type": "function", "name": …}: npud runs only function tools`)
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	return b, nil
}

// messages translates instructions and input into chat messages, after
// the conversation a previous response left (history).
func (r *responsesRequest) messages(history []message) ([]message, *Error) {
	out := append([]message(nil), history...)
	r.origins = make([]string, len(history), len(history)+1)
	for i := range r.origins {
		r.origins[i] = "previous_response_id"
	}
	if r.Instructions != nil && *r.Instructions != "" {
		// Instructions apply to this response only: they go first, before
		// the stored conversation, and are not kept for the next one.
		out = append([]message{{Role: "system", Content: textContent(*r.Instructions)}}, out...)
		r.origins = append([]string{"instructions"}, r.origins...)
	}
	if !isSet(r.Input) {
		return nil, invalid("input", "missing_required_parameter", "'input' is required")
	}
	if r.Input[0] == '"' {
		var s string
		if err := json.Unmarshal(r.Input, &s); err != nil {
			return nil, invalid("input", "invalid_type", "'input' must be a string or an array of items")
		}
		r.origins = append(r.origins, "input")
		return append(out, message{Role: "user", Content: textContent(s)}), nil
	}
	var items []inputItem
	if r.Input[0] != '[' || json.Unmarshal(r.Input, &items) != nil {
		return nil, invalid("input", "invalid_type", "'input' must be a string or an array of items")
	}
	if len(items) == 0 {
		return nil, invalid("input", "invalid_value", "'input' must contain at least one item")
	}
	if len(items) > maxInputItems {
		return nil, invalid("input", "invalid_value", "'input' has %d items: at most %d are allowed", len(items), maxInputItems)
	}
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			m, err := itemMessage(param, it)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			r.origins = append(r.origins, param)
		case "function_call":
			switch {
			case it.CallID == "" || len(it.CallID) > 256:
				return nil, invalid(param+".call_id", "invalid_value", "%s.call_id must be 1 to 256 characters", param)
			case it.Name == "":
				return nil, invalid(param+".name", "missing_required_parameter", "%s.name is required", param)
			}
			call := messageToolCall{ID: it.CallID, Type: "function"}
			call.Function.Name, call.Function.Arguments = it.Name, it.Arguments
			// Calls made in one turn belong to one assistant message.
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				out = append(out, message{Role: "assistant", Content: contentText{Present: true, Null: true}, ToolCalls: []messageToolCall{call}})
				r.origins = append(r.origins, param)
			}
		case "function_call_output":
			if it.CallID == "" && it.Name == "" {
				return nil, invalid(param+".call_id", "missing_required_parameter", "%s.call_id is required", param)
			}
			text, err := outputText(param+".output", it.Output)
			if err != nil {
				return nil, err
			}
			if it.CallID == "" {
				// An output no call asked for, named instead (Codex sends its
				// goal this way: name goal_objective, namespace agent). A chat
				// template has no tool turn without a call: it reaches the
				// model as what it is, a named piece of context from the client.
				name := it.Name
				if it.Namespace != "" {
					name = it.Namespace + "." + name
				}
				out = append(out, message{Role: "user", Content: textContent(name + ": " + text)})
				r.origins = append(r.origins, param)
				continue
			}
			out = append(out, message{Role: "tool", Content: textContent(text), ToolCallID: it.CallID})
			r.origins = append(r.origins, param)
		case "reasoning":
			// A model's earlier reasoning is not shown to it again: chat
			// templates drop it from past turns too.
		default:
			return nil, invalid(param+".type", "unsupported_value",
				"%s.type %q is not supported: use message, function_call, function_call_output or reasoning items", param, reqinfo.Clip(it.Type))
		}
	}
	return out, nil
}

func textContent(s string) contentText { return contentText{Text: s, Present: true} }

// itemMessage reads a message item: content a string or parts
// (input_text, output_text, input_image with an image_url).
func itemMessage(param string, it inputItem) (message, *Error) {
	if it.Role == "" {
		return message{}, invalid(param+".role", "missing_required_parameter", "%s.role is required", param)
	}
	if it.Role == "tool" || !openaichat.SupportedRole(it.Role) {
		return message{}, invalid(param+".role", "unsupported_value", "%s.role %q is not supported: use user, assistant, system or developer", param, reqinfo.Clip(it.Role))
	}
	m := message{Role: it.Role}
	if !isSet(it.Content) {
		return message{}, invalid(param+".content", "missing_required_parameter", "%s.content is required", param)
	}
	if it.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(it.Content, &s); err != nil {
			return message{}, invalid(param+".content", "invalid_type", "%s.content must be a string or an array of parts", param)
		}
		m.Content = textContent(s)
		return m, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return message{}, invalid(param+".content", "invalid_type", "%s.content must be a string or an array of parts", param)
	}
	var b strings.Builder
	m.Content.Present = true
	for j, p := range parts {
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		case "input_image":
			if p.ImageURL == "" {
				return message{}, invalid(pp+".image_url", "missing_required_parameter",
					"%s.image_url is required: images come as data URLs (file ids are not stored here)", pp)
			}
			m.Content.ImageURLs = append(m.Content.ImageURLs, p.ImageURL)
		default:
			return message{}, invalid(pp+".type", "unsupported_content",
				"%s.type %q is not supported: use input_text, output_text or input_image", pp, reqinfo.Clip(p.Type))
		}
	}
	m.Content.Text = b.String()
	return m, nil
}

// outputText is a function_call_output's output: a string, or parts of
// which the text ones are taken.
func outputText(param string, raw json.RawMessage) (string, *Error) {
	if !isSet(raw) {
		return "", invalid(param, "missing_required_parameter", "%s is required", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "invalid_type", "%s must be a string or an array of input_text parts", param)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" {
			return "", invalid(fmt.Sprintf("%s[%d].type", param, j), "unsupported_content", "%s[%d].type %q is not supported: only text parts", param, j, reqinfo.Clip(p.Type))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatRequest is the chat completion request this response runs as.
func (r *responsesRequest) chatRequest(history []message) (*request, *Error) {
	if r.Model == "" {
		return nil, invalid("model", "missing_required_parameter", "'model' is required")
	}
	if err := r.checkUnsupported(); err != nil {
		return nil, err
	}
	msgs, err := r.messages(history)
	if err != nil {
		return nil, err
	}
	tools, err := r.tools()
	if err != nil {
		return nil, err
	}
	choice, err := r.toolChoice()
	if err != nil {
		return nil, err
	}
	req := &request{
		Model: r.Model, Messages: msgs, MaxCompletionTokens: r.MaxOutputTokens,
		Temperature: r.Temperature, TopP: r.TopP, Seed: r.Seed, TopK: r.TopK, Stop: r.Stop, TimeoutMS: r.TimeoutMS,
		User: r.User, Stream: r.Stream, Tools: tools, ToolChoice: choice, ParallelToolCalls: r.ParallelToolCalls,
		ResponseFormat: r.responseFormat(),
	}
	if r.Reasoning != nil && r.Reasoning.Effort != nil {
		req.ReasoningEffort = r.Reasoning.Effort
	}
	return req, nil
}

// inputItems is the items of input as GET …/input_items lists them: a
// string input as its message item. Each item keeps only what npud reads
// of it (type, role, content's parts, a call's id, name and arguments, an
// output, an id): unknown fields and a reasoning item's summary are not
// kept, so what the store holds is what the conversation is made of.
func (r *responsesRequest) inputItems() []json.RawMessage {
	if len(r.Input) > 0 && r.Input[0] == '"' {
		b, _ := json.Marshal(storedItem{Type: "message", Role: "user",
			Content: []inputPart{{Type: "input_text", Text: jsonString(r.Input)}}}) // strings only
		return []json.RawMessage{b}
	}
	var raw []json.RawMessage
	_ = json.Unmarshal(r.Input, &raw) // checked already
	items := make([]json.RawMessage, 0, len(raw))
	for _, item := range raw {
		var it inputItem
		_ = json.Unmarshal(item, &it) // checked already
		stored := storedItem{Type: it.Type, ID: it.ID}
		switch it.Type {
		case "", "message":
			stored.Type, stored.Role, stored.Content = "message", it.Role, storedContent(it.Content)
		case "function_call":
			stored.CallID, stored.Name, stored.Arguments = it.CallID, it.Name, &it.Arguments
		case "function_call_output":
			stored.CallID, stored.Name, stored.Namespace, stored.Output = it.CallID, it.Name, it.Namespace, storedContent(it.Output)
		}
		b, _ := json.Marshal(stored) // strings and parts only
		items = append(items, b)
	}
	return items
}

// storedItem is an input item as the store keeps it.
type storedItem struct {
	Type      string  `json:"type"`
	ID        string  `json:"id,omitempty"`
	Role      string  `json:"role,omitempty"`
	Content   any     `json:"content,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Namespace string  `json:"namespace,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
	Output    any     `json:"output,omitempty"`
}

// storedContent is a message's content or a call's output as stored: a
// string, or its parts with the fields npud reads.
func storedContent(raw json.RawMessage) any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []inputPart
	if json.Unmarshal(raw, &parts) == nil {
		return parts
	}
	return nil
}

func jsonString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
