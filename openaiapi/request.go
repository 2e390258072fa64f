package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/jsonbody"
	"github.com/npud/npud/wire/openaiwire"
	"github.com/npud/npud/wire/reqinfo"
)

// maxTimeoutMS is the longest timeout_ms accepted: 7 days.
const maxTimeoutMS = 7 * 24 * 3600 * 1000

// request holds the fields of both /v1/chat/completions and /v1/completions.
// Unknown fields are ignored, as OpenAI-compatible servers do; known fields
// npud cannot honour are refused in validate rather than silently dropped.
type request struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Seed                *int64          `json:"seed"`
	Stop                stopList        `json:"stop"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User string `json:"user"`

	// Extensions.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	TimeoutMS         *int64   `json:"timeout_ms"`
	// Resumable keeps the generation running for the resume window after
	// the client left, and numbers the events (id: lines) so that a
	// reconnect with Last-Event-ID continues where it stopped. Also the
	// header X-Npud-Resumable: true.
	Resumable bool `json:"resumable"`

	// Tools the model may call, whether and which it must
	// (auto, none, required, or {"type":"function","function":{"name":…}}),
	// and whether it may make several calls in one answer.
	Tools             []toolDef       `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// ReasoningEffort: none turns a reasoning model's thinking off; minimal,
	// low, medium and high turn it on (reasoning comes back apart, in
	// reasoning_content).
	ReasoningEffort *string         `json:"reasoning_effort"`
	Functions       json.RawMessage `json:"functions"`
	Logprobs        json.RawMessage `json:"logprobs"`
	ResponseFormat  *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Echo   bool    `json:"echo"`
	BestOf *int    `json:"best_of"`
	Suffix *string `json:"suffix"`
}

type message struct {
	Role    string      `json:"role"`
	Content contentText `json:"content"`
	// An assistant message's calls, and which call a tool message answers.
	ToolCalls  []messageToolCall `json:"tool_calls"`
	ToolCallID string            `json:"tool_call_id"`
}

// A message's tool calls and a request's tools are OpenAI's wire, declared
// once for the API and the upstream engine that speaks it.
type (
	messageToolCall = openaiwire.ToolCall
	toolDef         = openaiwire.Tool
)

// maxTools bounds the tools of one request (OpenAI's own limit).
const maxTools = 128

// toolNamePattern is OpenAI's rule for function names.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// tools checks the tool definitions and the tool choice.
func (req *request) tools(out *npu.Request) *Error {
	if len(req.Tools) > maxTools {
		return invalid("tools", "invalid_value", "'tools' has %d tools: at most %d are allowed", len(req.Tools), maxTools)
	}
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return invalid(param+".type", "unsupported_value", "%s.type must be \"function\", got %q", param, reqinfo.Clip(t.Type))
		case t.Function == nil:
			return invalid(param+".function", "missing_required_parameter", "%s.function is required", param)
		case !toolNamePattern.MatchString(t.Function.Name):
			return invalid(param+".function.name", "invalid_value",
				"%s.function.name %q must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'", param, reqinfo.Clip(t.Function.Name))
		case seen[t.Function.Name]:
			return invalid(param+".function.name", "invalid_value", "%s.function.name %q is declared twice", param, t.Function.Name)
		case isSet(t.Function.Parameters) && t.Function.Parameters[0] != '{':
			return invalid(param+".function.parameters", "invalid_type", "%s.function.parameters must be a JSON schema object", param)
		}
		seen[t.Function.Name] = true
		tool := npu.Tool{Name: t.Function.Name, Description: t.Function.Description}
		if isSet(t.Function.Parameters) {
			tool.Parameters = t.Function.Parameters
		}
		out.Tools = append(out.Tools, tool)
	}
	if isSet(req.ToolChoice) {
		var mode string
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(req.ToolChoice, &mode) == nil:
			switch mode {
			case npu.ToolChoiceAuto, npu.ToolChoiceNone, npu.ToolChoiceRequired:
				out.ToolChoice.Mode = mode
			default:
				return invalid("tool_choice", "invalid_value", "'tool_choice' must be auto, none, required or a function, got %q", reqinfo.Clip(mode))
			}
		case json.Unmarshal(req.ToolChoice, &named) == nil && named.Type == "function":
			if !seen[named.Function.Name] {
				return invalid("tool_choice", "invalid_value", "'tool_choice' names function %q, which 'tools' does not declare", reqinfo.Clip(named.Function.Name))
			}
			out.ToolChoice = npu.ToolChoice{Mode: npu.ToolChoiceFunction, Name: named.Function.Name}
		default:
			return invalid("tool_choice", "invalid_value", `'tool_choice' must be "auto", "none", "required" or {"type": "function", "function": {"name": …}}`)
		}
		if len(out.Tools) == 0 && out.ToolChoice.Mode != npu.ToolChoiceNone && out.ToolChoice.Mode != npu.ToolChoiceAuto {
			return invalid("tool_choice", "invalid_value", "'tool_choice' is %q but the request declares no 'tools'", out.ToolChoice.Mode)
		}
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		out.SingleToolCall = true
	}
	return nil
}

// contentText is a message's content: a string, null, or an array of
// parts: text and image_url parts are taken; others are recorded so
// validate can name them.
type contentText struct {
	Text          string
	ImageURLs     []string // the image_url parts' URLs, in order
	NonTextPart   string   // type of the first part of another kind, if any
	present, null bool
}

func (c *contentText) UnmarshalJSON(b []byte) error {
	c.present = true
	switch {
	case bytes.Equal(b, []byte("null")):
		c.null = true
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Text)
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type     string   `json:"type"`
			Text     string   `json:"text"`
			ImageURL imageURL `json:"image_url"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var buf bytes.Buffer
		for _, p := range parts {
			switch {
			case p.Type == "text":
				buf.WriteString(p.Text)
			case p.Type == "image_url":
				c.ImageURLs = append(c.ImageURLs, string(p.ImageURL)) // "" is refused with the others
			case c.NonTextPart == "":
				c.NonTextPart = p.Type
			}
		}
		c.Text = buf.String()
		return nil
	}
	return jsonbody.TypeError(b, reflect.TypeFor[string]())
}

// imageURL is an image_url part's address: {"url": …} as OpenAI sends
// it, or the bare string some clients send.
type imageURL string

func (u *imageURL) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*u = imageURL(s)
		return nil
	}
	var obj struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return jsonbody.TypeError(b, reflect.TypeFor[string]())
	}
	*u = imageURL(obj.URL)
	return nil
}

// stopList is `stop`: a string or an array of strings.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	case len(b) > 0 && b[0] == '[':
		var many []string
		if err := json.Unmarshal(b, &many); err != nil {
			return err
		}
		*s = many
		return nil
	}
	return jsonbody.TypeError(b, reflect.TypeFor[[]string]())
}

// endpoint says which of the two completion endpoints a request came to.
type endpoint int

const (
	chatEndpoint endpoint = iota
	completionsEndpoint
)

// toEngineRequest validates req and builds the engine request.
func (req *request) toEngineRequest(ep endpoint, defaultTimeout time.Duration) (*npu.Request, *Error) {
	if req.Model == "" {
		return nil, invalid("model", "missing_required_parameter", "'model' is required")
	}
	out := &npu.Request{Model: req.Model}
	var err *Error
	if ep == chatEndpoint {
		out.Messages, err = req.chatMessages()
	} else {
		out.Prompt, err = req.prompt()
	}
	if err != nil {
		return nil, err
	}
	if err := req.checkUnsupported(); err != nil {
		return nil, err
	}
	if ep == completionsEndpoint && (len(req.Tools) > 0 || isSet(req.ToolChoice)) {
		return nil, invalid("tools", "unsupported_parameter", "'tools' are for /v1/chat/completions: a completion has no messages to carry calls and results")
	}
	if err := req.tools(out); err != nil {
		return nil, err
	}
	if out.MaxTokens, err = req.maxTokens(); err != nil {
		return nil, err
	}
	out.Sampling = req.sampling() // its ranges are checked with the engine's limits (Validate)
	for i, s := range req.Stop {
		if s == "" {
			return nil, invalid("stop", "invalid_value", "stop[%d] is empty: stop strings must not be empty", i)
		}
	}
	out.Stop = req.Stop
	if req.ReasoningEffort != nil {
		on := true
		switch effort := *req.ReasoningEffort; effort {
		case "none":
			on = false
		case "minimal", "low":
			out.ThinkLevel = "low"
		case "medium", "high":
			out.ThinkLevel = effort
		default:
			return nil, invalid("reasoning_effort", "invalid_value",
				"'reasoning_effort' must be none, minimal, low, medium or high, got %q", reqinfo.Clip(effort))
		}
		out.Think = &on
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, invalid("stream_options", "invalid_value", "'stream_options' is only allowed when 'stream' is true")
	}
	out.Timeout = defaultTimeout
	if req.TimeoutMS != nil {
		// Past a week it is a mistake, and far past it time.Duration wraps
		// around to a deadline microseconds away.
		if *req.TimeoutMS <= 0 || *req.TimeoutMS > maxTimeoutMS {
			return nil, invalid("timeout_ms", "invalid_value", "'timeout_ms' must be a number of milliseconds from 1 to %d (7 days), got %d", maxTimeoutMS, *req.TimeoutMS)
		}
		out.Timeout = time.Duration(*req.TimeoutMS) * time.Millisecond
	}
	// The engine's own limits, shared with the Ollama API.
	if err := out.Validate(); err != nil {
		return nil, invalidRequest(err)
	}
	return out, nil
}

var supportedRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

func (req *request) chatMessages() ([]npu.Message, *Error) {
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "invalid_value", "'messages' must contain at least one message")
	}
	out := make([]npu.Message, len(req.Messages))
	calls := map[string]string{} // the calls made so far: id → function name
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role == "":
			return nil, invalid(param+".role", "missing_required_parameter", "%s.role is required", param)
		case !supportedRoles[m.Role]:
			return nil, invalid(param+".role", "unsupported_value",
				"%s.role %q is not supported: use system, developer, user, assistant or tool", param, reqinfo.Clip(m.Role))
		case m.Content.NonTextPart != "":
			return nil, invalid(param+".content", "unsupported_content",
				"%s.content has a %q part: only text and image_url parts are supported", param, reqinfo.Clip(m.Content.NonTextPart))
		case len(m.Content.ImageURLs) > 0 && m.Role != "user":
			return nil, invalid(param+".content", "invalid_value", "%s.content: only user messages carry images", param)
		case (!m.Content.present || m.Content.null) && m.Role != "assistant":
			return nil, invalid(param+".content", "missing_required_parameter", "%s.content is required", param)
		case len(m.ToolCalls) > 0 && m.Role != "assistant":
			return nil, invalid(param+".tool_calls", "invalid_value", "%s.tool_calls: only assistant messages make tool calls", param)
		}
		msg := npu.Message{Role: m.Role, Content: m.Content.Text}
		for j, c := range m.ToolCalls {
			cp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
			switch {
			case c.ID == "" || len(c.ID) > 256:
				return nil, invalid(cp+".id", "invalid_value", "%s.id must be 1 to 256 characters", cp)
			case c.Type != "" && c.Type != "function":
				return nil, invalid(cp+".type", "unsupported_value", "%s.type must be \"function\", got %q", cp, reqinfo.Clip(c.Type))
			case c.Function.Name == "":
				return nil, invalid(cp+".function.name", "missing_required_parameter", "%s.function.name is required", cp)
			}
			calls[c.ID] = c.Function.Name
			msg.ToolCalls = append(msg.ToolCalls, npu.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if m.Role == "tool" {
			name, ok := calls[m.ToolCallID]
			switch {
			case m.ToolCallID == "":
				return nil, invalid(param+".tool_call_id", "missing_required_parameter", "%s.tool_call_id is required", param)
			case !ok:
				return nil, invalid(param+".tool_call_id", "invalid_value",
					"%s.tool_call_id %q answers no tool call of an earlier assistant message", param, reqinfo.Clip(m.ToolCallID))
			}
			msg.ToolCallID, msg.ToolName = m.ToolCallID, name
		}
		out[i] = msg
	}
	return out, nil
}

// decodeImages reads the image_url parts of the messages into out's
// messages (already built from them), within limits. The model is looked
// up first, and must see images, before anything is fetched or decoded;
// the decoded pictures hold their share of the image memory until
// out.Release (set here) runs.
func (req *request) decodeImages(ctx context.Context, limits imagein.Limits, runner ModelFinder, out *npu.Request) *Error {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content.ImageURLs)
	}
	if n == 0 {
		return nil
	}
	if err := limits.CheckCount(n); err != nil {
		return invalid("messages", "invalid_value", "%v", err)
	}
	m, err := runner.Model(req.Model)
	if err == nil {
		err = npu.CheckVision(m)
	}
	if err != nil {
		return toError(err, runner.RetryAfter)
	}
	batch := limits.Begin()
	for i, m := range req.Messages {
		for j, url := range m.Content.ImageURLs {
			img, err := batch.FromURL(ctx, url)
			if err != nil {
				batch.Release()
				if !errors.Is(err, imagein.ErrInvalid) {
					return toError(err, runner.RetryAfter) // the image memory is in use: 503
				}
				return invalid(fmt.Sprintf("messages[%d].content", i), "invalid_image", "messages[%d].content image %d: %v", i, j, err)
			}
			out.Messages[i].Images = append(out.Messages[i].Images, img)
		}
	}
	out.Release = batch.Release
	return nil
}

// prompt returns the single prompt of a legacy completion request.
func (req *request) prompt() (string, *Error) {
	if len(req.Prompt) == 0 || bytes.Equal(req.Prompt, []byte("null")) {
		return "", invalid("prompt", "missing_required_parameter", "'prompt' is required")
	}
	var one string
	if err := json.Unmarshal(req.Prompt, &one); err == nil {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(req.Prompt, &many); err == nil {
		if len(many) != 1 {
			return "", invalid("prompt", "unsupported_value", "'prompt' must be one string: batches of %d prompts are not supported", len(many))
		}
		return many[0], nil
	}
	return "", invalid("prompt", "invalid_type", "'prompt' must be a string (token-id prompts are not supported)")
}

func (req *request) checkUnsupported() *Error {
	notSupported := func(param, what string) *Error {
		return invalid(param, "unsupported_parameter", "'%s' is not supported: %s", param, what)
	}
	switch {
	case isSet(req.Functions):
		return notSupported("functions", "use 'tools' (the legacy 'functions' are not served)")
	case isSet(req.Logprobs) && !bytes.Equal(req.Logprobs, []byte("false")):
		return notSupported("logprobs", "log probabilities are not available")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text":
		return notSupported("response_format", fmt.Sprintf("type %q needs structured output, which is not available", req.ResponseFormat.Type))
	case req.Echo:
		return notSupported("echo", "echoing the prompt is not available")
	case req.BestOf != nil && *req.BestOf != 1:
		return notSupported("best_of", "only one candidate is generated")
	case req.Suffix != nil && *req.Suffix != "":
		return notSupported("suffix", "insertion is not available")
	case req.N != nil && *req.N != 1:
		return invalid("n", "unsupported_value", "'n' must be 1: one choice per request is supported, got %d", *req.N)
	}
	return nil
}

func isSet(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }

func (req *request) maxTokens() (int, *Error) {
	n, param := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		n, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if n == nil {
		return 0, nil
	}
	if *n <= 0 {
		return 0, invalid(param, "invalid_value", "'%s' must be at least 1, got %d", param, *n)
	}
	return *n, nil
}

func (req *request) sampling() npu.Sampling {
	return npu.Sampling{
		Temperature:       req.Temperature,
		TopP:              req.TopP,
		TopK:              req.TopK,
		MinP:              req.MinP,
		Seed:              req.Seed,
		RepetitionPenalty: req.RepetitionPenalty,
		PresencePenalty:   req.PresencePenalty,
		FrequencyPenalty:  req.FrequencyPenalty,
	}
}
