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
	// Truncate: a query/document pair longer than the model takes is cut
	// to fit, as its tokenizer truncates (Reranked.Truncated counts them);
	// without it such a pair is an InvalidRequestError.
	Truncate bool
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

// Reranked is a rerank's outcome.
type Reranked struct {
	Results      []RerankResult // every document's, best first
	PromptTokens int            // the tokens the model was given (after truncation)
	Truncated    int            // the documents whose pair with the query was truncated
}

// Reranker is an Engine that reranks (Features.Reranks): every document
// scored against query, truncating pairs longer than the model takes only
// when truncate is set.
type Reranker interface {
	Rerank(ctx context.Context, model, query string, documents []string, truncate bool) (Reranked, error)
}
