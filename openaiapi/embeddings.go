package openaiapi

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
)

// embeddingsRequest is POST /v1/embeddings.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	// InputType is npud's: the kind of the inputs ("query", "document"),
	// whose prompt the model's folder puts before each (Qwen3-Embedding's
	// query instruction); as Cohere's and Voyage's input_type.
	InputType string `json:"input_type"`
	// Truncate is npud's (as text-embeddings-inference's): cut an input
	// longer than the model takes to fit. Without it such an input is a
	// 400, as OpenAI answers one past its model's context.
	Truncate bool `json:"truncate"`
}

// ModelName is the model the request asks for (reqinfo.Named).
func (r *embeddingsRequest) ModelName() string { return r.Model }

// inputs decodes input: a string or an array of strings. Arrays of token
// ids (OpenAI takes them too) cannot be read without the model's
// tokenizer, which the engine does not expose.
func (r *embeddingsRequest) inputs() ([]string, *Error) {
	if !isSet(r.Input) {
		return nil, invalid("input", "missing_required_parameter", "'input' is required: a string or an array of strings")
	}
	var inputs []string
	var one string
	if json.Unmarshal(r.Input, &one) == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(r.Input, &inputs); err != nil {
		var tokens []json.Number
		var tokenLists [][]json.Number
		if json.Unmarshal(r.Input, &tokens) == nil || json.Unmarshal(r.Input, &tokenLists) == nil {
			return nil, invalid("input", "unsupported_value", "'input' as token ids is not supported: send the text")
		}
		return nil, invalid("input", "invalid_type", "'input' must be a string or an array of strings, got %s", jsonbody.Kind(r.Input))
	}
	if len(inputs) == 0 {
		return nil, invalid("input", "invalid_value", "'input' must not be an empty array")
	}
	for i, s := range inputs {
		if s == "" {
			return nil, invalid("input", "invalid_value", "'input'[%d] is empty: every input must have text", i)
		}
	}
	return inputs, nil
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

// embeddings serves POST /v1/embeddings on the engine's embedder, with the
// bounds of Ollama's /api/embed (--max-embed-inputs, the body limit).
func (a *API) embeddings(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	var req embeddingsRequest
	if !a.decode(c, info, &req) {
		return
	}
	if req.Model == "" {
		a.fail(c.Writer, info, invalid("model", "missing_required_parameter", "'model' is required"))
		return
	}
	inputs, apiErr := req.inputs()
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	if n := a.cfg.MaxEmbedInputs; n > 0 && len(inputs) > n {
		a.fail(c.Writer, info, invalid("input", "invalid_value", "'input' has %d items: at most %d per request (max-embed-inputs)", len(inputs), n))
		return
	}
	base64Out := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		base64Out = true // the official SDKs ask for it by default
	default:
		a.fail(c.Writer, info, invalid("encoding_format", "invalid_value", "'encoding_format' must be \"float\" or \"base64\", got %q", reqinfo.Clip(req.EncodingFormat)))
		return
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		a.fail(c.Writer, info, invalid("dimensions", "invalid_value", "'dimensions' must be at least 1, got %d", *req.Dimensions))
		return
	}
	embedded, err := a.router.Embed(c.Request.Context(), npu.EmbedRequest{Model: req.Model, Inputs: inputs, InputType: req.InputType,
		Truncate: req.Truncate, Tenant: info.Tenant})
	if err != nil {
		a.fail(c.Writer, info, a.modelWorkError(err))
		return
	}
	vectors, tokens := embedded.Vectors, embedded.PromptTokens
	if req.Truncate {
		c.Header(reqinfo.TruncatedInputsHeader, strconv.Itoa(embedded.Truncated))
	}
	if req.Dimensions != nil {
		if len(vectors) > 0 && *req.Dimensions > len(vectors[0]) {
			a.fail(c.Writer, info, invalid("dimensions", "invalid_value", "'dimensions' %d is more than model %q gives (%d)",
				*req.Dimensions, reqinfo.Clip(req.Model), len(vectors[0])))
			return
		}
		npu.ShortenEmbeddings(vectors, *req.Dimensions)
	}
	if a.router.Simulated() {
		// Say so where a client can see it: the vectors carry no meaning.
		c.Header("X-Npud-Simulated", "true")
	}
	data := make([]embeddingData, len(vectors))
	for i, v := range vectors {
		data[i] = embeddingData{Object: "embedding", Index: i, Embedding: v}
		if base64Out {
			data[i].Embedding = float32Base64(v)
		}
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "model": req.Model,
		"usage": gin.H{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// float32Base64 is OpenAI's base64 encoding of a vector: its float32
// values, little-endian, one after another.
func float32Base64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// modelWorkError is the answer to an embedding or transcription that
// failed: a model that cannot do this kind of work is the request's fault
// (400 on 'model'), not the server's; anything else as any generation's.
func (a *API) modelWorkError(err error) *Error {
	if errors.Is(err, npu.ErrNotSupported) {
		return &Error{Type: "invalid_request_error", Param: "model", Code: "unsupported_value", Base: errclass.Base{Status: http.StatusBadRequest,
			Message: err.Error(), Cause: err}}
	}
	return toError(err, a.router.RetryAfter)
}
