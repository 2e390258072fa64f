package openaiapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/jsonbody"
	"github.com/npud/npud/wire/reqinfo"
)

// request holds the fields of both /v1/chat/completions and /v1/completions.
// Unknown fields are ignored, as OpenAI-compatible servers do; known fields

// maxTimeoutMS is the longest timeout_ms accepted: 7 days.
const maxTimeoutMS = 7 * 24 * 3600 * 1000

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

	// Known fields that need capabilities npud does not have yet.
	Tools json.RawMessage `json:"tools"`
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
}

// contentText is a message's content: a string, null, or an array of parts.
// Only text parts are supported; others are recorded so validate can name them.
type contentText struct {
	Text          string
	NonTextPart   string // type of the first non-text part, if any
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
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var buf bytes.Buffer
		for _, p := range parts {
			if p.Type != "text" {
				if c.NonTextPart == "" {
					c.NonTextPart = p.Type
				}
				continue
			}
			buf.WriteString(p.Text)
		}
		c.Text = buf.String()
		return nil
	}
	return jsonbody.TypeError(b, reflect.TypeFor[string]())
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
	if out.MaxTokens, err = req.maxTokens(); err != nil {
		return nil, err
	}
	if out.Sampling, err = req.sampling(); err != nil {
		return nil, err
	}
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

var supportedRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

func (req *request) chatMessages() ([]npu.Message, *Error) {
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "invalid_value", "'messages' must contain at least one message")
	}
	out := make([]npu.Message, len(req.Messages))
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role == "":
			return nil, invalid(param+".role", "missing_required_parameter", "%s.role is required", param)
		case !supportedRoles[m.Role]:
			return nil, invalid(param+".role", "unsupported_value",
				"%s.role %q is not supported: use system, developer, user or assistant (tool calls are not supported yet)", param, m.Role)
		case m.Content.NonTextPart != "":
			return nil, invalid(param+".content", "unsupported_content",
				"%s.content has a %q part: only text parts are supported", param, m.Content.NonTextPart)
		case (!m.Content.present || m.Content.null) && m.Role != "assistant":
			return nil, invalid(param+".content", "missing_required_parameter", "%s.content is required", param)
		}
		out[i] = npu.Message{Role: m.Role, Content: m.Content.Text}
	}
	return out, nil
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
	case isSet(req.Tools) && !bytes.Equal(req.Tools, []byte("[]")):
		return notSupported("tools", "this server does not do tool calling yet")
	case isSet(req.Functions):
		return notSupported("functions", "this server does not do function calling")
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

func (req *request) sampling() (npu.Sampling, *Error) {
	type bound struct {
		param    string
		v        *float64
		lo, hi   float64
		loOpen   bool
		hiOpen   bool
		describe string
	}
	for _, b := range []bound{
		{"temperature", req.Temperature, 0, 2, false, false, "between 0 and 2"},
		{"top_p", req.TopP, 0, 1, true, false, "greater than 0 and at most 1"},
		{"presence_penalty", req.PresencePenalty, -2, 2, false, false, "between -2 and 2"},
		{"frequency_penalty", req.FrequencyPenalty, -2, 2, false, false, "between -2 and 2"},
		{"min_p", req.MinP, 0, 1, false, true, "at least 0 and less than 1"},
	} {
		if b.v == nil {
			continue
		}
		v := *b.v
		if v < b.lo || v > b.hi || (b.loOpen && v == b.lo) || (b.hiOpen && v == b.hi) {
			return npu.Sampling{}, invalid(b.param, "invalid_value", "'%s' must be %s, got %g", b.param, b.describe, v)
		}
	}
	if req.RepetitionPenalty != nil && *req.RepetitionPenalty <= 0 {
		return npu.Sampling{}, invalid("repetition_penalty", "invalid_value", "'repetition_penalty' must be greater than 0, got %g", *req.RepetitionPenalty)
	}
	if req.TopK != nil && *req.TopK < 0 {
		return npu.Sampling{}, invalid("top_k", "invalid_value", "'top_k' must be 0 (off) or more, got %d", *req.TopK)
	}
	return npu.Sampling{
		Temperature:       req.Temperature,
		TopP:              req.TopP,
		TopK:              req.TopK,
		MinP:              req.MinP,
		Seed:              req.Seed,
		RepetitionPenalty: req.RepetitionPenalty,
		PresencePenalty:   req.PresencePenalty,
		FrequencyPenalty:  req.FrequencyPenalty,
	}, nil
}
