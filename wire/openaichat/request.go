package openaichat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/imagein"
	"github.com/npud/npud/wire/reqinfo"
)

// maxTimeoutMS is the longest timeout_ms accepted: 7 days.
const maxTimeoutMS = 7 * 24 * 3600 * 1000

// MaxTools bounds the tools of one request (OpenAI's own limit).
const MaxTools = 128

// toolNamePattern is OpenAI's rule for function names.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// tools checks the tool definitions and the tool choice.
func tools(req *openaiwire.ChatRequest, out *npu.Request) *Error {
	if len(req.Tools) > MaxTools {
		return Invalid("tools", "invalid_value", "'tools' has %d tools: at most %d are allowed", len(req.Tools), MaxTools)
	}
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return Invalid(param+".type", "unsupported_value", "%s.type must be \"function\", got %q", param, reqinfo.Clip(t.Type))
		case t.Function == nil:
			return Invalid(param+".function", "missing_required_parameter", "%s.function is required", param)
		case !toolNamePattern.MatchString(t.Function.Name):
			return Invalid(param+".function.name", "invalid_value",
				"%s.function.name %q must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'", param, reqinfo.Clip(t.Function.Name))
		case seen[t.Function.Name]:
			return Invalid(param+".function.name", "invalid_value", "%s.function.name %q is declared twice", param, t.Function.Name)
		case IsSet(t.Function.Parameters) && t.Function.Parameters[0] != '{':
			return Invalid(param+".function.parameters", "invalid_type", "%s.function.parameters must be a JSON schema object", param)
		}
		seen[t.Function.Name] = true
		tool := npu.Tool{Name: t.Function.Name, Description: t.Function.Description}
		if IsSet(t.Function.Parameters) {
			tool.Parameters = t.Function.Parameters
		}
		out.Tools = append(out.Tools, tool)
	}
	if IsSet(req.ToolChoice) {
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
				return Invalid("tool_choice", "invalid_value", "'tool_choice' must be auto, none, required or a function, got %q", reqinfo.Clip(mode))
			}
		case json.Unmarshal(req.ToolChoice, &named) == nil && named.Type == "function":
			if !seen[named.Function.Name] {
				return Invalid("tool_choice", "invalid_value", "'tool_choice' names function %q, which 'tools' does not declare", reqinfo.Clip(named.Function.Name))
			}
			out.ToolChoice = npu.ToolChoice{Mode: npu.ToolChoiceFunction, Name: named.Function.Name}
		default:
			return Invalid("tool_choice", "invalid_value", `'tool_choice' must be "auto", "none", "required" or {"type": "function", "function": {"name": …}}`)
		}
		if len(out.Tools) == 0 && out.ToolChoice.Mode != npu.ToolChoiceNone && out.ToolChoice.Mode != npu.ToolChoiceAuto {
			return Invalid("tool_choice", "invalid_value", "'tool_choice' is %q but the request declares no 'tools'", out.ToolChoice.Mode)
		}
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		out.SingleToolCall = true
	}
	return nil
}

// Endpoint says which of the two completion endpoints a request came to.
type Endpoint int

// The endpoints: /v1/chat/completions (and everything that carries a chat
// request: the WebSocket's start messages, the Responses API) and
// /v1/completions.
const (
	Chat Endpoint = iota
	Completions
)

// EngineRequest validates req, a request to the endpoint ep, and builds
// the engine request.
func EngineRequest(req *openaiwire.ChatRequest, ep Endpoint, defaultTimeout time.Duration) (*npu.Request, *Error) {
	if req.Model == "" {
		return nil, Invalid("model", "missing_required_parameter", "'model' is required")
	}
	out := &npu.Request{Model: req.Model}
	var err *Error
	if ep == Chat {
		out.Messages, err = chatMessages(req)
	} else {
		out.Prompt, err = prompt(req)
	}
	if err != nil {
		return nil, err
	}
	if err := checkUnsupported(req); err != nil {
		return nil, err
	}
	if ep == Completions && (len(req.Tools) > 0 || IsSet(req.ToolChoice)) {
		return nil, Invalid("tools", "unsupported_parameter", "'tools' are for /v1/chat/completions: a completion has no messages to carry calls and results")
	}
	if err := tools(req, out); err != nil {
		return nil, err
	}
	if err := legacyFunctions(req, out); err != nil {
		return nil, err
	}
	if ep == Completions && len(req.Functions) > 0 {
		return nil, Invalid("functions", "unsupported_parameter", "'functions' are for /v1/chat/completions: a completion has no messages to carry calls and results")
	}
	if out.Format, err = responseFormat(req.ResponseFormat); err != nil {
		return nil, err
	}
	if _, err := Choices(req); err != nil {
		return nil, err
	}
	if out.MaxTokens, err = maxTokens(req); err != nil {
		return nil, err
	}
	out.Sampling = sampling(req) // its ranges are checked with the engine's limits (Validate)
	for i, s := range req.Stop {
		if s == "" {
			return nil, Invalid("stop", "invalid_value", "stop[%d] is empty: stop strings must not be empty", i)
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
			return nil, Invalid("reasoning_effort", "invalid_value",
				"'reasoning_effort' must be none, minimal, low, medium or high, got %q", reqinfo.Clip(effort))
		}
		out.Think = &on
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, Invalid("stream_options", "invalid_value", "'stream_options' is only allowed when 'stream' is true")
	}
	out.Timeout = defaultTimeout
	if req.TimeoutMS != nil {
		// Past a week it is a mistake, and far past it time.Duration wraps
		// around to a deadline microseconds away.
		if *req.TimeoutMS <= 0 || *req.TimeoutMS > maxTimeoutMS {
			return nil, Invalid("timeout_ms", "invalid_value", "'timeout_ms' must be a number of milliseconds from 1 to %d (7 days), got %d", maxTimeoutMS, *req.TimeoutMS)
		}
		out.Timeout = time.Duration(*req.TimeoutMS) * time.Millisecond
	}
	// The engine's own limits, shared with the Ollama API.
	if err := out.Validate(); err != nil {
		return nil, invalidRequest(err)
	}
	return out, nil
}

// SupportedRole reports whether a chat message may have role.
func SupportedRole(role string) bool {
	switch role {
	case "system", "developer", "user", "assistant", "tool":
		return true
	}
	return false
}

func chatMessages(req *openaiwire.ChatRequest) ([]npu.Message, *Error) {
	if len(req.Messages) == 0 {
		return nil, Invalid("messages", "invalid_value", "'messages' must contain at least one message")
	}
	out := make([]npu.Message, len(req.Messages))
	calls := map[string]string{}  // the calls made so far: id → function name
	legacy := map[string]string{} // legacy function_calls: function name → its latest call's id
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role == "function" {
			msg, err := functionResult(m, param, legacy)
			if err != nil {
				return nil, err
			}
			out[i] = msg
			continue
		}
		switch {
		case m.Role == "":
			return nil, Invalid(param+".role", "missing_required_parameter", "%s.role is required", param)
		case !SupportedRole(m.Role):
			return nil, Invalid(param+".role", "unsupported_value",
				"%s.role %q is not supported: use system, developer, user, assistant or tool", param, reqinfo.Clip(m.Role))
		case m.Content.NonTextPart != "":
			return nil, Invalid(param+".content", "unsupported_content",
				"%s.content has a %q part: only text and image_url parts are supported", param, reqinfo.Clip(m.Content.NonTextPart))
		case len(m.Content.ImageURLs) > 0 && m.Role != "user":
			return nil, Invalid(param+".content", "invalid_value", "%s.content: only user messages carry images", param)
		case (!m.Content.Present || m.Content.Null) && m.Role != "assistant":
			return nil, Invalid(param+".content", "missing_required_parameter", "%s.content is required", param)
		case len(m.ToolCalls) > 0 && m.Role != "assistant":
			return nil, Invalid(param+".tool_calls", "invalid_value", "%s.tool_calls: only assistant messages make tool calls", param)
		case m.FunctionCall != nil && m.Role != "assistant":
			return nil, Invalid(param+".function_call", "invalid_value", "%s.function_call: only assistant messages make function calls", param)
		}
		msg := npu.Message{Role: m.Role, Content: m.Content.Text}
		for j, c := range m.ToolCalls {
			cp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
			switch {
			case c.ID == "" || len(c.ID) > 256:
				return nil, Invalid(cp+".id", "invalid_value", "%s.id must be 1 to 256 characters", cp)
			case c.Type != "" && c.Type != "function":
				return nil, Invalid(cp+".type", "unsupported_value", "%s.type must be \"function\", got %q", cp, reqinfo.Clip(c.Type))
			case c.Function.Name == "":
				return nil, Invalid(cp+".function.name", "missing_required_parameter", "%s.function.name is required", cp)
			}
			calls[c.ID] = c.Function.Name
			msg.ToolCalls = append(msg.ToolCalls, npu.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if fc := m.FunctionCall; fc != nil {
			if fc.Name == "" {
				return nil, Invalid(param+".function_call.name", "missing_required_parameter", "%s.function_call.name is required", param)
			}
			id := legacyCallID(i)
			calls[id], legacy[fc.Name] = fc.Name, id
			msg.ToolCalls = append(msg.ToolCalls, npu.ToolCall{ID: id, Name: fc.Name, Arguments: fc.Arguments})
		}
		if m.Role == "tool" {
			name, ok := calls[m.ToolCallID]
			switch {
			case m.ToolCallID == "":
				return nil, Invalid(param+".tool_call_id", "missing_required_parameter", "%s.tool_call_id is required", param)
			case !ok:
				return nil, Invalid(param+".tool_call_id", "invalid_value",
					"%s.tool_call_id %q answers no tool call of an earlier assistant message", param, reqinfo.Clip(m.ToolCallID))
			}
			msg.ToolCallID, msg.ToolName = m.ToolCallID, name
		}
		out[i] = msg
	}
	return out, nil
}

// functionResult is a legacy "function" message: the result of the
// latest function_call to the function it names (latest maps a function's
// name to its latest call's id).
func functionResult(m openaiwire.Message, param string, latest map[string]string) (npu.Message, *Error) {
	switch {
	case m.Name == "":
		return npu.Message{}, Invalid(param+".name", "missing_required_parameter", "%s.name is required: it names the function whose result this is", param)
	case m.Content.NonTextPart != "" || len(m.Content.ImageURLs) > 0:
		return npu.Message{}, Invalid(param+".content", "unsupported_content", "%s.content: a function's result is text", param)
	}
	id, ok := latest[m.Name]
	if !ok {
		return npu.Message{}, Invalid(param+".name", "invalid_value", "%s answers function %q, which no earlier assistant message's function_call called", param, reqinfo.Clip(m.Name))
	}
	return npu.Message{Role: "tool", Content: m.Content.Text, ToolCallID: id, ToolName: m.Name}, nil
}

// DecodeImages reads the image_url parts of the messages into out's
// messages (already built from them), within limits. The model is looked
// up first, and must see images, before anything is fetched or decoded;
// the decoded pictures hold their share of the image memory until
// out.Release (set here) runs.
func DecodeImages(ctx context.Context, req *openaiwire.ChatRequest, limits imagein.Limits, router ModelFinder, out *npu.Request) *Error {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content.ImageURLs)
	}
	if n == 0 {
		return nil
	}
	if err := limits.CheckCount(n); err != nil {
		return Invalid("messages", "invalid_value", "%v", err)
	}
	m, err := router.Model(req.Model)
	if err == nil {
		err = npu.CheckVision(m)
	}
	if err != nil {
		return ErrorOf(err, router.RetryAfter)
	}
	batch := limits.Begin()
	for i, m := range req.Messages {
		for j, url := range m.Content.ImageURLs {
			img, err := batch.FromURL(ctx, url)
			if err != nil {
				batch.Release()
				if !errors.Is(err, imagein.ErrInvalid) {
					return ErrorOf(err, router.RetryAfter) // the image memory is in use: 503
				}
				return Invalid(fmt.Sprintf("messages[%d].content", i), "invalid_image", "messages[%d].content image %d: %v", i, j, err)
			}
			out.Messages[i].Images = append(out.Messages[i].Images, img)
		}
	}
	out.Release = batch.Release
	return nil
}

// prompt returns the single prompt of a legacy completion request.
func prompt(req *openaiwire.ChatRequest) (string, *Error) {
	if len(req.Prompt) == 0 || bytes.Equal(req.Prompt, []byte("null")) {
		return "", Invalid("prompt", "missing_required_parameter", "'prompt' is required")
	}
	var one string
	if err := json.Unmarshal(req.Prompt, &one); err == nil {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(req.Prompt, &many); err == nil {
		if len(many) != 1 {
			return "", Invalid("prompt", "unsupported_value", "'prompt' must be one string: batches of %d prompts are not supported", len(many))
		}
		return many[0], nil
	}
	return "", Invalid("prompt", "invalid_type", "'prompt' must be a string (token-id prompts are not supported)")
}

// NoLogprobs is why log probabilities are refused: the engine never has
// them. OpenVINO GenAI's C API hands a generation back as text (the
// streamer callback's const char*, ov_genai_decoded_results_get_string)
// and its performance metrics (ov_genai_decoded_results_get_perf_metrics),
// and nothing else: no per-token scores, although generation_config.h
// lets a caller ask GenAI to compute them (ov_genai_generation_config_set_logprobs).
// See src/c/include/openvino/genai/c/llm_pipeline.h and generation_config.h
// in openvinotoolkit/openvino.genai, tag 2026.3.0.0.
const NoLogprobs = "npud's engine returns no per-token log probabilities: OpenVINO GenAI's C API gives back only the generated text and its timings"

func checkUnsupported(req *openaiwire.ChatRequest) *Error {
	notSupported := func(param, what string) *Error {
		return Invalid(param, "unsupported_parameter", "'%s' is not supported: %s", param, what)
	}
	switch {
	case IsSet(req.Logprobs) && !bytes.Equal(req.Logprobs, []byte("false")) && !bytes.Equal(req.Logprobs, []byte("0")):
		return notSupported("logprobs", NoLogprobs)
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return notSupported("top_logprobs", NoLogprobs)
	case req.Echo:
		return notSupported("echo", "echoing the prompt is not available")
	case req.BestOf != nil && *req.BestOf != 1:
		return notSupported("best_of", "only one candidate is generated")
	case req.Suffix != nil && *req.Suffix != "":
		return notSupported("suffix", "insertion is not available")
	}
	return nil
}

// IsSet reports whether raw holds a value: present and not null.
func IsSet(raw json.RawMessage) bool { return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) }

func maxTokens(req *openaiwire.ChatRequest) (int, *Error) {
	n, param := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		n, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if n == nil {
		return 0, nil
	}
	if *n <= 0 {
		return 0, Invalid(param, "invalid_value", "'%s' must be at least 1, got %d", param, *n)
	}
	return *n, nil
}

func sampling(req *openaiwire.ChatRequest) npu.Sampling {
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
