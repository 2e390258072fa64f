package anthropicapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/wire/reqinfo"
)

// count_tokens answers the model's exact count where npud counts the
// model's prompts (it renders them and counts them with the model's own
// tokenizer: the count is the usage.input_tokens the same request
// reports), and an estimate where it does not (GenAI renders the model's
// prompts, an upstream serves it; see docs/OPENVINO-INTERNALS.md). It says
// which: the header EstimateHeader ("exact" or "estimate") and the body's
// npud_estimate.
const (
	EstimateHeader = "Npud-Token-Count"
	// bytesPerToken is the estimate's rule: BPE tokenizers average about
	// four bytes of English text or code a token.
	bytesPerToken = 4
	// perMessageTokens stands for a chat template's markers around a turn.
	perMessageTokens = 4
	// pixelsPerToken is Anthropic's published rule for images.
	pixelsPerToken = 750
)

type countResponse struct {
	InputTokens int  `json:"input_tokens"`
	Estimate    bool `json:"npud_estimate"`
}

// countTokens serves POST /v1/messages/count_tokens: the same body as a
// message request, without max_tokens.
func (a *API) countTokens(c *gin.Context) {
	ctx := c.Request.Context()
	info := reqinfo.From(ctx)
	var req request
	if !a.decode(c, info, &req) {
		return
	}
	if req.MaxTokens == nil {
		unbounded := math.MaxInt32 // count_tokens has no max_tokens; nothing is generated
		req.MaxTokens = &unbounded
	}
	req.Stream = false
	p, apiErr := req.toEngineRequest(0)
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	// Images count by their size: their headers are read, nothing is
	// decoded and no image memory is held.
	if apiErr := a.prepare(ctx, p, true); apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if p.req.Release != nil {
		defer p.req.Release() // measured images hold no memory; the router does not take the request
	}
	p.req.Tenant = info.Tenant
	n, err := a.router.CountPrompt(ctx, p.req)
	switch {
	case err == nil:
		c.Header(EstimateHeader, "exact")
		c.JSON(http.StatusOK, countResponse{InputTokens: n, Estimate: false})
	case errors.Is(err, npu.ErrPromptNotCounted):
		c.Header(EstimateHeader, "estimate")
		c.JSON(http.StatusOK, countResponse{InputTokens: EstimateTokens(p.req), Estimate: true})
	default:
		a.fail(c.Writer, info, a.toError(err))
	}
}

// EstimateTokens estimates the prompt tokens of req: its text (contents,
// tool calls and results, tool definitions) at bytesPerToken, a few
// tokens a message for the template, and images by their pixels.
func EstimateTokens(req *npu.Request) int {
	bytes := 0
	tokens := 0
	for _, m := range req.Messages {
		tokens += perMessageTokens
		bytes += len(m.Content)
		for _, call := range m.ToolCalls {
			bytes += len(call.Name) + len(call.Arguments)
		}
		for _, img := range m.Images {
			tokens += max(1, img.Width*img.Height/pixelsPerToken)
		}
	}
	for _, t := range req.Tools {
		schema, _ := json.Marshal(t.Parameters) // raw JSON: always encodes
		bytes += len(t.Name) + len(t.Description) + len(schema)
	}
	return tokens + (bytes+bytesPerToken-1)/bytesPerToken
}
