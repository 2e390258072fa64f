package openaichat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/reqinfo"
)

// schemaNamePattern is OpenAI's rule for a json_schema's name.
var schemaNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// FormatFields are a structured output's fields wherever an OpenAI API
// keeps them: nested in chat's response_format.json_schema, flat in the
// Responses API's text.format.
type FormatFields struct {
	Type   string
	Name   string
	Schema json.RawMessage
	Strict *bool
}

// FormatParams name the fields for errors: the type's parameter
// (response_format.type) and the prefix of the schema's fields
// (response_format.json_schema, text.format).
type FormatParams struct {
	Type, Fields string
}

// ParseFormat checks a structured output's fields: nil for text (or no
// type), a JSON object, or a named JSON Schema.
func ParseFormat(f FormatFields, p FormatParams) (*npu.Format, *Error) {
	switch f.Type {
	case "", "text":
		return nil, nil
	case npu.FormatJSONObject:
		return &npu.Format{Type: npu.FormatJSONObject}, nil
	case npu.FormatJSONSchema:
	default:
		return nil, Invalid(p.Type, "invalid_value", "'%s' must be text, json_object or json_schema, got %q", p.Type, reqinfo.Clip(f.Type))
	}
	name := p.Fields + ".name"
	switch {
	case f.Name == "":
		return nil, Invalid(name, "missing_required_parameter", "'%s' is required", name)
	case !schemaNamePattern.MatchString(f.Name):
		return nil, Invalid(name, "invalid_value", "'%s' %q must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'", name, reqinfo.Clip(f.Name))
	}
	if err := npu.CheckFormatSchema(f.Schema); err != nil {
		return nil, Invalid(p.Fields+".schema", "invalid_value", "'%s.schema': %v", p.Fields, err)
	}
	out := &npu.Format{Type: npu.FormatJSONSchema, Name: f.Name, Schema: bytes.TrimSpace(f.Schema)}
	if f.Strict != nil {
		out.Strict = *f.Strict
	}
	return out, nil
}

// responseFormat reads chat's response_format.
func responseFormat(rf *openaiwire.ResponseFormat) (*npu.Format, *Error) {
	if rf == nil {
		return nil, nil
	}
	f := FormatFields{Type: rf.Type}
	if rf.Type == npu.FormatJSONSchema {
		if rf.JSONSchema == nil {
			return nil, Invalid("response_format.json_schema", "missing_required_parameter", "'response_format.json_schema' is required when 'response_format.type' is json_schema")
		}
		f.Name, f.Schema, f.Strict = rf.JSONSchema.Name, rf.JSONSchema.Schema, rf.JSONSchema.Strict
	}
	return ParseFormat(f, FormatParams{Type: "response_format.type", Fields: "response_format.json_schema"})
}

// MaxChoices bounds n: each choice is a generation of its own, run one
// after another.
const MaxChoices = 8

// Choices is how many choices (n) the request asks for: 1 to MaxChoices.
func Choices(req *openaiwire.ChatRequest) (int, *Error) {
	if req.N == nil {
		return 1, nil
	}
	if n := *req.N; n < 1 || n > MaxChoices {
		return 0, Invalid("n", "invalid_value", "'n' must be from 1 to %d (each choice is a generation of its own, run one after another), got %d", MaxChoices, n)
	}
	return *req.N, nil
}

// UsesFunctions reports whether the request declared its tools in the
// legacy 'functions': its answer then names its call function_call, as
// OpenAI answers such a request.
func UsesFunctions(req *openaiwire.ChatRequest) bool { return len(req.Functions) > 0 }

// legacyFunctions turns the legacy functions and function_call into
// tools and a tool choice. A legacy answer holds at most one call.
func legacyFunctions(req *openaiwire.ChatRequest, out *npu.Request) *Error {
	if len(req.Functions) == 0 {
		if IsSet(req.FunctionCall) {
			return Invalid("function_call", "invalid_value", "'function_call' needs 'functions'")
		}
		return nil
	}
	if len(req.Tools) > 0 || IsSet(req.ToolChoice) {
		return Invalid("functions", "invalid_value", "'functions' is the legacy form of 'tools': send one or the other, not both")
	}
	if len(req.Functions) > MaxTools {
		return Invalid("functions", "invalid_value", "'functions' has %d functions: at most %d are allowed", len(req.Functions), MaxTools)
	}
	seen := make(map[string]bool, len(req.Functions))
	for i, f := range req.Functions {
		param := fmt.Sprintf("functions[%d]", i)
		switch {
		case !toolNamePattern.MatchString(f.Name):
			return Invalid(param+".name", "invalid_value", "%s.name %q must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'", param, reqinfo.Clip(f.Name))
		case seen[f.Name]:
			return Invalid(param+".name", "invalid_value", "%s.name %q is declared twice", param, f.Name)
		case IsSet(f.Parameters) && f.Parameters[0] != '{':
			return Invalid(param+".parameters", "invalid_type", "%s.parameters must be a JSON schema object", param)
		}
		seen[f.Name] = true
		tool := npu.Tool{Name: f.Name, Description: f.Description}
		if IsSet(f.Parameters) {
			tool.Parameters = f.Parameters
		}
		out.Tools = append(out.Tools, tool)
	}
	out.SingleToolCall = true
	if !IsSet(req.FunctionCall) {
		return nil
	}
	var mode string
	var named struct {
		Name string `json:"name"`
	}
	switch {
	case json.Unmarshal(req.FunctionCall, &mode) == nil:
		if mode != npu.ToolChoiceAuto && mode != npu.ToolChoiceNone {
			return Invalid("function_call", "invalid_value", "'function_call' must be \"auto\", \"none\" or {\"name\": …}, got %q", reqinfo.Clip(mode))
		}
		out.ToolChoice.Mode = mode
	case json.Unmarshal(req.FunctionCall, &named) == nil && named.Name != "":
		if !seen[named.Name] {
			return Invalid("function_call", "invalid_value", "'function_call' names function %q, which 'functions' does not declare", reqinfo.Clip(named.Name))
		}
		out.ToolChoice = npu.ToolChoice{Mode: npu.ToolChoiceFunction, Name: named.Name}
	default:
		return Invalid("function_call", "invalid_value", "'function_call' must be \"auto\", \"none\" or {\"name\": …}")
	}
	return nil
}

// legacyCallID names the call an assistant message's function_call made
// (the legacy form has no ids): the message's index makes it unique.
func legacyCallID(message int) string { return fmt.Sprintf("call_fn_%d", message) }
