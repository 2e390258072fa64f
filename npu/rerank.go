package npu

import (
	"context"
	"time"
)

// MaxRerankDocuments bounds the documents of one rerank request.
const MaxRerankDocuments = 1024

// RerankRequest is one rerank job: documents scored against a query by a
// cross-encoder.
type RerankRequest struct {
	Model     string
	Query     string
	Documents []string
	// Tenant, KeepAlive and MayUnpin as EmbedRequest's.
	Tenant    string
	KeepAlive *time.Duration
	MayUnpin  bool
}

// RerankResult is one document's relevance to the query.
type RerankResult struct {
	Index int     // the document's position in the request
	Score float32 // the model's relevance, in [0, 1]
}

// Reranker is an Engine that reranks (Features.Reranks): it returns every
// document's result, best first, and the tokens the model was given.
type Reranker interface {
	Rerank(ctx context.Context, model, query string, documents []string) (results []RerankResult, promptTokens int, err error)
}
