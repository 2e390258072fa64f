//go:build cgo

package openvino

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// The Qwen3-Reranker prompt, as its model card gives it and GenAI's tests
// format their queries and documents before TextRerankPipeline
// (openvino.genai tests/python_tests/utils/qwen3_reranker_utils.py, used by
// test_rag.py's test_qwen3_seq_cls_rerank_documents): TextRerankPipeline
// itself only concatenates query and document, so a raw query and raw
// documents would reach the model without the framing it was trained on.
const (
	qwen3RerankSystem = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. " +
		"Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
	qwen3RerankInstruction = "Given a web search query, retrieve relevant passages that answer the query"
	qwen3RerankAnswer      = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	// qwen3Framed starts a query the client framed itself (as GenAI's tests
	// do): npud then concatenates query and document as they are.
	qwen3Framed = "<|im_start|>"
)

// qwen3RerankText is the one text a Qwen3 reranker scores for query and
// doc: TextRerankPipeline's query + text (text_rerank_pipeline.cpp,
// tokenize), the query and the document framed by the model's prompt
// unless the query is framed already.
func qwen3RerankText(query, doc string) string {
	if strings.HasPrefix(query, qwen3Framed) {
		return query + doc
	}
	return qwen3RerankSystem + "<Instruct>: " + qwen3RerankInstruction + "\n<Query>: " + query + "\n" +
		"<Document>: " + doc + qwen3RerankAnswer
}

// openQwen3Reranker opens a Qwen3 reranker in its sequence-classification
// form (logits [batch, 1], which TextRerankPipeline's
// apply_qwen3_postprocessing turns into their sigmoid). Its tokenizer
// encodes one text (GenAI opens it without add_second_input), truncated at
// its own length, and pads a batch on its own side with its own pad id,
// which the classifier reads to find each row's last token.
func (l *Library) openQwen3Reranker(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*reranker, error) {
	cut, err := modelstore.ReadTruncation(dir)
	if err != nil {
		return nil, err
	}
	pad, err := modelstore.ReadPadding(dir)
	if err != nil {
		return nil, err
	}
	emb, err := l.openEmbedder(ctx, dir, device, ir)
	if err != nil {
		return nil, err
	}
	specials := len(emb.tok.prefix) + len(emb.tok.suffix)
	budget := cut.MaxLength
	if positions := modelstore.RerankMaxLength(dir); positions > 0 && (budget == 0 || positions-specials < budget) {
		budget = positions - specials
	}
	if budget < 0 || (budget == 0 && cut.MaxLength != 0) {
		_ = emb.close()
		return nil, fmt.Errorf("%s: the model takes %d tokens of text", dir, budget)
	}
	return &reranker{embedder: emb, budget: budget, cut: cut, pad: pad, qwen3: true}, nil
}

// rerankQwen3 scores each document as query and document in one text
// (qwen3RerankText), truncated as the tokenizer truncates one text (its
// side, to its length) when the client allows it.
func (r *reranker) rerankQwen3(ctx context.Context, query string, docs []string, truncate bool) (npu.Reranked, error) {
	seqs := make([][]int64, len(docs))
	specials := len(r.tok.prefix) + len(r.tok.suffix)
	total, truncated := 0, 0
	for i, doc := range docs {
		ids, err := r.tok.Encode(ctx, qwen3RerankText(query, doc))
		if err != nil {
			return npu.Reranked{}, fmt.Errorf("document %d: %w", i, err)
		}
		if r.budget > 0 && len(ids) > r.budget {
			if !truncate {
				return npu.Reranked{}, &TooLongPairError{Index: i, Tokens: len(ids) + specials, Max: r.budget + specials}
			}
			if r.cut.Left {
				ids = ids[len(ids)-r.budget:]
			} else {
				ids = ids[:r.budget]
			}
			truncated++
		}
		seqs[i] = slices.Concat(r.tok.prefix, ids, r.tok.suffix)
		if len(seqs[i]) == 0 {
			return npu.Reranked{}, &emptyInputError{index: i}
		}
		total += len(seqs[i])
	}
	results, err := r.scoreAll(ctx, seqs, nil)
	if err != nil {
		return npu.Reranked{}, err
	}
	return npu.Reranked{Results: results, PromptTokens: total, Truncated: truncated}, nil
}
