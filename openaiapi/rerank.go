package openaiapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/wire/reqinfo"
)

// maxRerankText bounds the query and each document, in bytes: a
// cross-encoder takes a few hundred to a few thousand tokens of a pair, so
// more is a mistake (the body limit bounds the whole request).
const maxRerankText = 256 << 10

// truncatedHeader is the response header that says, when a request asked
// for truncation, how many of its documents were cut with the query to
// the model's length (0 too): nothing is truncated without the client
// asking, and knowing.
const truncatedHeader = "X-Npud-Truncated-Documents"

// rerankRequest is POST /v1/rerank (and /rerank): the shape Jina's,
// Cohere's, llama.cpp's and vLLM's rerank APIs share, with Hugging Face
// text-embeddings-inference's truncate (default false: a pair longer than
// the model takes is a 400).
type rerankRequest struct {
	Model           string          `json:"model"`
	Query           *string         `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int            `json:"top_n"`
	ReturnDocuments bool            `json:"return_documents"`
	Truncate        bool            `json:"truncate"`
}

// ModelName is the model the request asks for (reqinfo.Named).
func (r *rerankRequest) ModelName() string { return r.Model }

// documents decodes documents: an array of strings, each with text, at
// most npu.MaxRerankDocuments of them.
func (r *rerankRequest) documents() ([]string, *Error) {
	if !isSet(r.Documents) {
		return nil, invalid("documents", "missing_required_parameter", "'documents' is required: an array of strings")
	}
	var docs []string
	if err := json.Unmarshal(r.Documents, &docs); err != nil {
		return nil, invalid("documents", "invalid_type", "'documents' must be an array of strings, got %s", jsonbody.Kind(r.Documents))
	}
	if len(docs) == 0 {
		return nil, invalid("documents", "invalid_value", "'documents' must not be an empty array")
	}
	if len(docs) > npu.MaxRerankDocuments {
		return nil, invalid("documents", "invalid_value", "'documents' has %d items: at most %d per request", len(docs), npu.MaxRerankDocuments)
	}
	for i, d := range docs {
		switch {
		case d == "":
			return nil, invalid("documents", "invalid_value", "'documents'[%d] is empty: every document must have text", i)
		case len(d) > maxRerankText:
			return nil, invalid("documents", "invalid_value", "'documents'[%d] is %d bytes: at most %d", i, len(d), maxRerankText)
		case !utf8.ValidString(d):
			return nil, invalid("documents", "invalid_value", "'documents'[%d] is not valid UTF-8", i)
		}
	}
	return docs, nil
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float32         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

// rerank serves POST /v1/rerank and /rerank on the engine's reranker:
// every document scored against the query by a cross-encoder, best first,
// the first top_n (all without it).
func (a *API) rerank(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	var req rerankRequest
	if !a.decode(c, info, &req) {
		return
	}
	if req.Model == "" {
		a.fail(c.Writer, info, invalid("model", "missing_required_parameter", "'model' is required"))
		return
	}
	switch {
	case req.Query == nil:
		a.fail(c.Writer, info, invalid("query", "missing_required_parameter", "'query' is required: a string"))
		return
	case *req.Query == "":
		a.fail(c.Writer, info, invalid("query", "invalid_value", "'query' is empty"))
		return
	case len(*req.Query) > maxRerankText:
		a.fail(c.Writer, info, invalid("query", "invalid_value", "'query' is %d bytes: at most %d", len(*req.Query), maxRerankText))
		return
	}
	docs, apiErr := req.documents()
	if apiErr != nil {
		a.fail(c.Writer, info, apiErr)
		return
	}
	topN := len(docs)
	if req.TopN != nil {
		if *req.TopN < 1 {
			a.fail(c.Writer, info, invalid("top_n", "invalid_value", "'top_n' must be at least 1, got %d", *req.TopN))
			return
		}
		topN = min(topN, *req.TopN)
	}
	out, err := a.router.Rerank(c.Request.Context(), npu.RerankRequest{Model: req.Model, Query: *req.Query, Documents: docs,
		Truncate: req.Truncate, Tenant: info.Tenant})
	if err != nil {
		a.fail(c.Writer, info, a.modelWorkError(err))
		return
	}
	if a.router.Simulated() {
		c.Header("X-Npud-Simulated", "true")
	}
	if req.Truncate {
		c.Header(truncatedHeader, strconv.Itoa(out.Truncated))
	}
	ranked, tokens := out.Results, out.PromptTokens
	results := make([]rerankResult, 0, topN)
	for _, r := range ranked[:min(topN, len(ranked))] {
		out := rerankResult{Index: r.Index, RelevanceScore: r.Score}
		if req.ReturnDocuments && r.Index >= 0 && r.Index < len(docs) {
			out.Document = &rerankDocument{Text: docs[r.Index]}
		}
		results = append(results, out)
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "model": req.Model, "results": results,
		"usage": gin.H{"prompt_tokens": tokens, "total_tokens": tokens}})
}
