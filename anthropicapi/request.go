package anthropicapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/reqinfo"
)

// request is a Messages API request. Unknown fields are ignored, as the
// other APIs do; known fields npud cannot honour are refused by name.
type request struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []message       `json:"messages"`
	Tools         []toolDef       `json:"tools"`
	ToolChoice    *toolChoice     `json:"tool_choice"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Thinking      *thinking       `json:"thinking"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	Stream bool `json:"stream"`
	// OutputConfig carries the structured output (format) and the
	// effort; OutputFormat is format's deprecated place, at the top.
	OutputConfig *outputConfig   `json:"output_config"`
	OutputFormat *outputFormat   `json:"output_format"`
	MCPServers   json.RawMessage `json:"mcp_servers"`
	Container    json.RawMessage `json:"container"`
}

// ModelName is the model the request asks for (reqinfo.Named).
func (req *request) ModelName() string { return req.Model }

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is one content block of any type; which fields count depends on
// the type.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// image
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// thinking
	Thinking string `json:"thinking"`
}

type toolDef struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// outputConfig is output_config. The anthropic package's structured
// outputs (messages.parse(output_format=Model), and output_config=
// {"format": …} as given) send {"format": {"type": "json_schema",
// "schema": S}} here, with S the model's schema made strict
// (anthropic/resources/messages/messages.py and lib/_parse/_transform.py
// of anthropic 2.14); Claude Code sends {"effort": "high"}. The effort is
// the model's to weigh, which npud's models cannot: it is accepted and
// left out.
type outputConfig struct {
	Format *outputFormat   `json:"format"`
	Effort json.RawMessage `json:"effort"`
}

// outputFormat is a structured output: {"type": "json_schema", "schema": …}.
type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// format reads the structured output the request asks for, from
// output_config.format or the deprecated output_format.
func (req *request) format() (*npu.Format, *Error) {
	f, where := req.OutputFormat, "output_format"
	if req.OutputConfig != nil && req.OutputConfig.Format != nil {
		if f != nil {
			return nil, invalid("output_format: deprecated: send output_config.format alone, not both")
		}
		f, where = req.OutputConfig.Format, "output_config.format"
	}
	if f == nil {
		return nil, nil
	}
	if f.Type != "json_schema" {
		return nil, invalid("%s.type: must be json_schema, got %q", where, reqinfo.Clip(f.Type))
	}
	if err := npu.CheckFormatSchema(f.Schema); err != nil {
		return nil, invalid("%s.schema: %v", where, err)
	}
	return &npu.Format{Type: npu.FormatJSONSchema, Schema: bytes.TrimSpace(f.Schema), Strict: true}, nil
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
}

const (
	// maxTools bounds the tools of one request.
	maxTools = 128
	// maxBlocks bounds the content blocks of one message.
	maxBlocks = 1024
	// minThinkingBudget is Anthropic's least budget_tokens.
	minThinkingBudget = 1024
)

// toolNamePattern is Anthropic's rule for tool names.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// imageRef is an image block waiting to be decoded, once the request is
// known to be valid and its model to take images.
type imageRef struct {
	message int // index in the engine request's messages
	where   string
	source  string // "base64" or "url"
	data    string
}

// parsed is a request checked and turned into the engine's terms.
type parsed struct {
	req    *npu.Request
	images []imageRef
}

func isSet(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }

// toEngineRequest validates req and builds the engine request.
func (req *request) toEngineRequest(defaultTimeout time.Duration) (*parsed, *Error) {
	if req.Model == "" {
		return nil, invalid("model: Field required")
	}
	if req.MaxTokens == nil {
		return nil, invalid("max_tokens: Field required")
	}
	if *req.MaxTokens < 1 {
		return nil, invalid("max_tokens: must be at least 1, got %d", *req.MaxTokens)
	}
	switch {
	case isSet(req.MCPServers):
		return nil, invalid("mcp_servers: not supported: npud runs no MCP connector")
	case isSet(req.Container):
		return nil, invalid("container: not supported: npud runs no code execution containers")
	}
	p := &parsed{req: &npu.Request{Model: req.Model, MaxTokens: *req.MaxTokens, Timeout: defaultTimeout}}
	if err := req.system(p); err != nil {
		return nil, err
	}
	if err := req.messages(p); err != nil {
		return nil, err
	}
	if err := req.tools(p.req); err != nil {
		return nil, err
	}
	for i, s := range req.StopSequences {
		if s == "" {
			return nil, invalid("stop_sequences.%d: must not be empty", i)
		}
	}
	p.req.Stop = req.StopSequences
	if err := req.sampling(p.req); err != nil {
		return nil, err
	}
	var err *Error
	if p.req.Format, err = req.format(); err != nil {
		return nil, err
	}
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			switch {
			case t.BudgetTokens == nil:
				return nil, invalid("thinking.enabled.budget_tokens: Field required")
			case *t.BudgetTokens < minThinkingBudget:
				return nil, invalid("thinking.enabled.budget_tokens: must be at least %d, got %d", minThinkingBudget, *t.BudgetTokens)
			case *t.BudgetTokens >= *req.MaxTokens:
				return nil, invalid("thinking.enabled.budget_tokens: must be less than max_tokens (%d), got %d", *req.MaxTokens, *t.BudgetTokens)
			}
			on := true
			p.req.Think = &on
		case "disabled":
			off := false
			p.req.Think = &off
		case "adaptive":
			// The model decides (Claude Code sends it): the model's default.
		default:
			return nil, invalid("thinking.type: must be enabled, disabled or adaptive, got %q", reqinfo.Clip(t.Type))
		}
	}
	// The engine's own limits, shared with the other APIs.
	if err := p.req.Validate(); err != nil {
		return nil, toError(err, nil, nil)
	}
	return p, nil
}

// system is the system prompt: a string or an array of text blocks.
func (req *request) system(p *parsed) *Error {
	if !isSet(req.System) {
		return nil
	}
	text, err := textOf(req.System, "system")
	if err != nil {
		return err
	}
	p.addSystem(text)
	return nil
}

// addSystem adds text to the system prompt, the conversation's first
// message.
func (p *parsed) addSystem(text string) {
	if len(p.req.Messages) > 0 && p.req.Messages[0].Role == "system" {
		p.req.Messages[0].Content += "\n\n" + text
		return
	}
	p.req.Messages = append([]npu.Message{{Role: "system", Content: text}}, p.req.Messages...)
	for i := range p.images {
		p.images[i].message++ // their messages moved down one
	}
}

// textOf reads content that may only hold text: a string, or an array of
// text blocks (cache_control and citations on them are ignored).
func textOf(raw json.RawMessage, where string) (string, *Error) {
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid("%s: %v", where, err)
		}
		return s, nil
	}
	blocks, err := blocksOf(raw, where)
	if err != nil {
		return "", err
	}
	return joinText(blocks, where, "only text blocks are allowed here")
}

// joinText joins text blocks with newlines; any other block is refused
// with refusal.
func joinText(blocks []block, where, refusal string) (string, *Error) {
	var b strings.Builder
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", invalid("%s.%d.type: %s, got %q", where, i, refusal, reqinfo.Clip(bl.Type))
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

func blocksOf(raw json.RawMessage, where string) ([]block, *Error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid("%s: must be a string or an array of content blocks", where)
	}
	var blocks []block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, invalid("%s: %v", where, err)
	}
	if len(blocks) > maxBlocks {
		return nil, invalid("%s: %d content blocks: at most %d are allowed", where, len(blocks), maxBlocks)
	}
	return blocks, nil
}

// messages turns the conversation into the engine's messages: a user
// turn's tool_result blocks become tool messages (before its text), an
// assistant turn's tool_use blocks its calls; thinking blocks of earlier
// turns are accepted and not shown to the model again (chat templates
// drop earlier reasoning).
func (req *request) messages(p *parsed) *Error {
	if len(req.Messages) == 0 {
		return invalid("messages: at least one message is required")
	}
	calls := map[string]string{} // tool_use id → tool name
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return invalid("%s.role: must be user, assistant or system, got %q", where, reqinfo.Clip(m.Role))
		}
		if !isSet(m.Content) {
			return invalid("%s.content: Field required", where)
		}
		if m.Role == "system" {
			// Claude Code sends system messages among the turns. Chat
			// templates take a system message only first (some fail on
			// one later), so its text joins the system prompt.
			text, err := textOf(m.Content, where+".content")
			if err != nil {
				return err
			}
			p.addSystem(text)
			continue
		}
		if m.Content[0] == '"' {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				return invalid("%s.content: %v", where, err)
			}
			p.req.Messages = append(p.req.Messages, npu.Message{Role: m.Role, Content: s})
			continue
		}
		blocks, err := blocksOf(m.Content, where+".content")
		if err != nil {
			return err
		}
		msg := npu.Message{Role: m.Role}
		var text strings.Builder
		var pendingImages []imageRef
		for j, b := range blocks {
			bw := fmt.Sprintf("%s.content.%d", where, j)
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "image":
				if m.Role != "user" {
					return invalid("%s: only user messages carry images", bw)
				}
				ref, err := imageSource(b, bw)
				if err != nil {
					return err
				}
				pendingImages = append(pendingImages, ref)
			case "tool_use":
				if m.Role != "assistant" {
					return invalid("%s: only assistant messages make tool calls", bw)
				}
				switch {
				case b.ID == "" || len(b.ID) > 256:
					return invalid("%s.id: must be 1 to 256 characters", bw)
				case b.Name == "":
					return invalid("%s.name: Field required", bw)
				case !isSet(b.Input) || b.Input[0] != '{':
					return invalid("%s.input: must be an object", bw)
				}
				calls[b.ID] = b.Name
				msg.ToolCalls = append(msg.ToolCalls, npu.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				if m.Role != "user" {
					return invalid("%s: only user messages carry tool results", bw)
				}
				name, ok := calls[b.ToolUseID]
				if !ok {
					return invalid("%s.tool_use_id: %q answers no tool_use block of an earlier assistant message", bw, reqinfo.Clip(b.ToolUseID))
				}
				content := ""
				if isSet(b.Content) {
					var err *Error
					if content, err = toolResultText(b.Content, bw+".content"); err != nil {
						return err
					}
				}
				if b.IsError {
					// Chat templates have no error flag: the model reads it.
					content = "Error: " + content
				}
				p.req.Messages = append(p.req.Messages, npu.Message{Role: "tool", Content: content, ToolCallID: b.ToolUseID, ToolName: name})
			case "thinking", "redacted_thinking":
				if m.Role != "assistant" {
					return invalid("%s: only assistant messages carry %s blocks", bw, b.Type)
				}
			case "document", "search_result", "server_tool_use", "web_search_tool_result", "container_upload":
				return invalid("%s.type: %q blocks are not supported by npud", bw, b.Type)
			default:
				return invalid("%s.type: unknown content block type %q", bw, reqinfo.Clip(b.Type))
			}
		}
		msg.Content = text.String()
		if msg.Content == "" && len(msg.ToolCalls) == 0 && len(pendingImages) == 0 {
			continue // only tool results (now tool messages) or earlier thinking
		}
		for k := range pendingImages {
			pendingImages[k].message = len(p.req.Messages)
		}
		p.images = append(p.images, pendingImages...)
		p.req.Messages = append(p.req.Messages, msg)
	}
	if len(p.req.Messages) == 0 || p.req.Messages[len(p.req.Messages)-1].Role == "system" {
		return invalid("messages: nothing to answer: the messages hold no content")
	}
	return nil
}

func imageSource(b block, where string) (imageRef, *Error) {
	s := b.Source
	if s == nil {
		return imageRef{}, invalid("%s.source: Field required", where)
	}
	switch s.Type {
	case "base64":
		switch s.MediaType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return imageRef{}, invalid("%s.source.media_type: must be image/jpeg, image/png, image/gif or image/webp, got %q", where, reqinfo.Clip(s.MediaType))
		}
		return imageRef{where: where, source: "base64", data: s.Data}, nil
	case "url":
		return imageRef{where: where, source: "url", data: s.URL}, nil
	}
	return imageRef{}, invalid("%s.source.type: must be base64 or url, got %q", where, reqinfo.Clip(s.Type))
}

// toolResultText is a tool_result's content: a string or text blocks
// (an image in a tool result is refused: templates cannot place it).
func toolResultText(raw json.RawMessage, where string) (string, *Error) {
	if raw[0] == '"' {
		return textOf(raw, where)
	}
	blocks, err := blocksOf(raw, where)
	if err != nil {
		return "", err
	}
	return joinText(blocks, where, "tool results may hold text blocks only here")
}

func (req *request) tools(out *npu.Request) *Error {
	if len(req.Tools) > maxTools {
		return invalid("tools: %d tools: at most %d are allowed", len(req.Tools), maxTools)
	}
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		where := fmt.Sprintf("tools.%d", i)
		switch {
		case t.Type != "" && t.Type != "custom":
			return invalid("%s.type: %q is a tool Anthropic's servers run; npud runs none: declare it as a custom tool with an input_schema", where, reqinfo.Clip(t.Type))
		case !toolNamePattern.MatchString(t.Name):
			return invalid("%s.name: %q must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'", where, reqinfo.Clip(t.Name))
		case seen[t.Name]:
			return invalid("%s.name: %q is declared twice", where, t.Name)
		case !isSet(t.InputSchema):
			return invalid("%s.input_schema: Field required", where)
		case t.InputSchema[0] != '{':
			return invalid("%s.input_schema: must be a JSON schema object", where)
		}
		seen[t.Name] = true
		out.Tools = append(out.Tools, npu.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	tc := req.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Type {
	case "auto":
		out.ToolChoice.Mode = npu.ToolChoiceAuto
	case "none":
		out.ToolChoice.Mode = npu.ToolChoiceNone
	case "any":
		out.ToolChoice.Mode = npu.ToolChoiceRequired
	case "tool":
		if !seen[tc.Name] {
			return invalid("tool_choice.name: %q is not a tool the request declares", reqinfo.Clip(tc.Name))
		}
		out.ToolChoice = npu.ToolChoice{Mode: npu.ToolChoiceFunction, Name: tc.Name}
	default:
		return invalid("tool_choice.type: must be auto, any, tool or none, got %q", reqinfo.Clip(tc.Type))
	}
	if len(out.Tools) == 0 && (tc.Type == "any" || tc.Type == "tool") {
		return invalid("tool_choice: %q needs tools, and the request declares none", tc.Type)
	}
	out.SingleToolCall = tc.DisableParallelToolUse
	return nil
}

// sampling takes the request's sampling parameters; their ranges are the
// engine's one table (npu.Request.Validate), except temperature: the
// Messages API has it between 0 and 1, the others between 0 and 2, and a
// client is told its own API's range.
func (req *request) sampling(out *npu.Request) *Error {
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return invalid("temperature: must be between 0 and 1, got %g", *t)
	}
	out.Sampling = npu.Sampling{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK}
	return nil
}

// decodeImages reads the request's images, within limits, into its
// messages; the caller checked that the model takes images. The decoded
// pictures hold their share of the image memory until the request's
// Release (set here) runs. With sizeOnly (a token count) each image's
// header is read for its size and nothing is decoded or reserved.
func (p *parsed) decodeImages(ctx context.Context, limits imagein.Limits, sizeOnly bool, toError func(error) *Error) *Error {
	if len(p.images) == 0 {
		return nil
	}
	if err := limits.CheckCount(len(p.images)); err != nil {
		return invalid("messages: %v", err)
	}
	batch := limits.Begin()
	if sizeOnly {
		batch = limits.Measure()
	}
	for _, ref := range p.images {
		var img npu.Image
		var err error
		if ref.source == "base64" {
			img, err = batch.FromBase64(ref.data)
		} else {
			img, err = batch.FromURL(ctx, ref.data)
		}
		if err != nil {
			batch.Release()
			if !errors.Is(err, imagein.ErrInvalid) {
				return toError(err) // the image memory is in use: overloaded
			}
			return invalid("%s: %v", ref.where, err)
		}
		m := &p.req.Messages[ref.message]
		m.Images = append(m.Images, img)
	}
	p.req.Release = batch.Release
	return nil
}
