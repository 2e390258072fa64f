package openaichat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/openaiwire"
	"github.com/npud/npud/wire/imagein"
)

// ModelFinder resolves a request's model and says how long a client
// should wait when the engine is busy: what reading a chat request with
// images needs of the router.
type ModelFinder interface {
	Model(id string) (npu.ModelInfo, error)
	RetryAfter() time.Duration
}

// Fingerprint identifies a request by what it asks, whatever its
// formatting: a digest of the decoded request. One request id must always
// carry the same request, over HTTP and over the WebSocket alike.
func Fingerprint(req *openaiwire.ChatRequest) string {
	canonical, _ := json.Marshal(req) // a decoded request always encodes
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// Start is a chat request decoded and checked as /v1/chat/completions
// checks it, for npud's WebSocket, whose start message carries one.
type Start struct {
	Request     *npu.Request
	Model       string
	Fingerprint string // what the request asks, for joining by id
	Resumable   bool
}

// ParseStart decodes raw (the fields of a chat completion request;
// others are ignored) and validates it. It always streams.
func ParseStart(ctx context.Context, raw []byte, defaultTimeout time.Duration, images imagein.Limits, router ModelFinder) (Start, *Error) {
	var req openaiwire.ChatRequest
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&req); err != nil {
		return Start{}, Invalid("", "invalid_message", "start: %v", err)
	}
	req.Stream = true
	if req.N != nil && *req.N != 1 {
		return Start{}, Invalid("n", "unsupported_value", "'n' must be 1 on the WebSocket: a generation is one choice (start one generation per choice), got %d", *req.N)
	}
	engineReq, apiErr := EngineRequest(&req, Chat, defaultTimeout)
	if apiErr != nil {
		return Start{}, apiErr
	}
	if apiErr := DecodeImages(ctx, &req, images, router, engineReq); apiErr != nil {
		return Start{}, apiErr
	}
	return Start{Request: engineReq, Model: req.Model, Fingerprint: Fingerprint(&req), Resumable: req.Resumable}, nil
}

// UsageOf is a result's usage.
func UsageOf(r npu.Result) openaiwire.Usage {
	u := openaiwire.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		TotalTokens: r.PromptTokens + r.CompletionTokens}
	if r.CachedPromptTokens > 0 {
		u.PromptDetails = &openaiwire.PromptDetails{CachedTokens: r.CachedPromptTokens}
	}
	return u
}

// FinishReason maps the engine's reason to OpenAI's (and npud's WebSocket's).
func FinishReason(r npu.FinishReason) string {
	switch r {
	case npu.FinishLength:
		return openaiwire.FinishLength
	case npu.FinishToolCalls:
		return openaiwire.FinishToolCalls
	}
	return openaiwire.FinishStop
}

// ToolCallDeltas puts the bridge's pieces of tool calls in OpenAI's
// delta.tool_calls shape; a piece that only says a call is complete has
// nothing to send.
func ToolCallDeltas(pieces []npu.ToolCallDelta) []openaiwire.ToolCallDelta {
	var out []openaiwire.ToolCallDelta
	for _, d := range pieces {
		if d.ID == "" && d.Arguments == "" {
			continue
		}
		td := openaiwire.ToolCallDelta{Index: d.Index, ID: d.ID, Function: openaiwire.FunctionCallDelta{Name: d.Name, Arguments: d.Arguments}}
		if d.ID != "" {
			td.Type = "function"
		}
		out = append(out, td)
	}
	return out
}
