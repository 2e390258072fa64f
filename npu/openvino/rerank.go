//go:build cgo

package openvino

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/modelstore"
)

// rerank's bounds on one inference: the pairs in it and the tokens of its
// padded batch (pairs × the longest). A request with more runs as several
// inferences, in order.
const (
	maxRerankBatch       = 32
	maxRerankBatchTokens = 16384
)

// reranker is a cross-encoder compiled on OpenVINO's core with its own
// tokenizer: what GenAI's TextRerankPipeline does (openvino.genai
// src/cpp/src/rag/text_rerank_pipeline.cpp), through the C API.
type reranker struct {
	*embedder // the compiled IR, its tokenizer and its infer request
	pair      modelstore.PairTemplate
	maxLength int // the most tokens of one pair; 0: no bound but the batch's
}

// openReranker compiles the cross-encoder in dir for device, and its
// tokenizer on the CPU. TextRerankPipeline pairs a query with a document
// in the tokenizer (add_second_input, from the tokenizer's
// processed_post_processor_template) for every model but Qwen3, whose
// prompts it concatenates instead: npud does not do Qwen3's yet.
func (l *Library) openReranker(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*reranker, error) {
	if t := modelstore.RerankModelType(dir); t == "qwen3" {
		return nil, fmt.Errorf("%s: a Qwen3 reranker, whose query and document TextRerankPipeline concatenates: npud does not serve those yet", dir)
	}
	pair, err := modelstore.ReadPairTemplate(dir)
	if err != nil {
		return nil, err
	}
	emb, err := l.openEmbedder(ctx, dir, device, ir)
	if err != nil {
		return nil, err
	}
	return &reranker{embedder: emb, pair: pair, maxLength: modelstore.RerankMaxLength(dir)}, nil
}

// pairTokens are the ids and token types of query and document joined as
// the tokenizer's pair template joins them (GenAI's AddSecondInputPass
// builds the tokenizer's second input from the same template): query
// where it says -1, document where -2, its special tokens elsewhere.
func (r *reranker) pairTokens(query, doc []int64) (ids, types []int64) {
	for i, id := range r.pair.Ids {
		var part []int64
		switch id {
		case -1:
			part = query
		case -2:
			part = doc
		default:
			part = []int64{id}
		}
		ids = append(ids, part...)
		for range part {
			types = append(types, r.pair.TypeIDs[i])
		}
	}
	return ids, types
}

// TooLongPairError is a query/document pair over the model's length:
// TextRerankPipeline would truncate it in the tokenizer; npud refuses it
// rather than guess how.
type TooLongPairError struct {
	Index, Tokens, Max int
}

func (e *TooLongPairError) Error() string {
	return fmt.Sprintf("document %d with the query is %d tokens, more than the model's %d", e.Index, e.Tokens, e.Max)
}

// rerank scores every document against query and returns them best
// first (a stable sort: equal scores keep the documents' order), and the
// tokens the model was given (every pair's, special tokens included).
func (r *reranker) rerank(ctx context.Context, query string, docs []string) ([]npu.RerankResult, int, error) {
	if len(docs) > npu.MaxRerankDocuments {
		return nil, 0, fmt.Errorf("%d documents, more than %d", len(docs), npu.MaxRerankDocuments)
	}
	q, err := r.tok.Encode(ctx, query)
	if err != nil {
		return nil, 0, fmt.Errorf("query: %w", err)
	}
	seqs := make([][]int64, len(docs))
	kinds := make([][]int64, len(docs))
	total := 0
	for i, doc := range docs {
		d, err := r.tok.Encode(ctx, doc)
		if err != nil {
			return nil, 0, fmt.Errorf("document %d: %w", i, err)
		}
		seqs[i], kinds[i] = r.pairTokens(q, d)
		if r.maxLength > 0 && len(seqs[i]) > r.maxLength {
			return nil, 0, &TooLongPairError{Index: i, Tokens: len(seqs[i]), Max: r.maxLength}
		}
		if len(seqs[i]) == 0 {
			return nil, 0, &emptyInputError{index: i}
		}
		total += len(seqs[i])
	}
	results := make([]npu.RerankResult, 0, len(docs))
	for start := 0; start < len(seqs); {
		end, longest := start, 0
		for end < len(seqs) && end-start < maxRerankBatch && (end-start+1)*max(longest, len(seqs[end])) <= maxRerankBatchTokens {
			longest = max(longest, len(seqs[end]))
			end++
		}
		if end == start { // one pair over the token budget alone: run it alone
			longest, end = len(seqs[start]), start+1
		}
		scores, err := r.score(ctx, seqs[start:end], kinds[start:end], longest)
		if err != nil {
			return nil, 0, err
		}
		for i, s := range scores {
			results = append(results, npu.RerankResult{Index: start + i, Score: s})
		}
		start = end
	}
	slices.SortStableFunc(results, func(a, b npu.RerankResult) int { return cmp.Compare(b.Score, a.Score) })
	return results, total, nil
}

// score runs one batch: pairs padded on the right to length with id 0 and
// mask 0 (the model ignores them, as it does GenAI's padding), their
// token types where the model takes them, and turns the logits into
// scores as TextRerankPipeline's post-processing does: the sigmoid of a
// single logit, else the softmax's second class.
func (r *reranker) score(ctx context.Context, seqs, kinds [][]int64, length int) ([]float32, error) {
	rows := len(seqs)
	ids := make([]int64, rows*length)
	mask := make([]int64, rows*length)
	var types []int64
	if r.ir.HasInput("token_type_ids") {
		types = make([]int64, rows*length)
	}
	for row, s := range seqs {
		copy(ids[row*length:], s)
		if types != nil {
			copy(types[row*length:], kinds[row])
		}
		for c := range s {
			mask[row*length+c] = 1
		}
	}
	logits, dims, err := r.infer(ctx, ids, mask, types, rows, length, modelstore.RerankOutput, 2)
	if err != nil {
		return nil, err
	}
	if int(dims[0]) != rows || dims[1] < 1 {
		return nil, fmt.Errorf("%s: %s has shape %v for a batch of %d", r.dir, modelstore.RerankOutput, dims[:2], rows)
	}
	return relevance(logits, rows, int(dims[1])), nil
}

// relevance is TextRerankPipeline's apply_postprocessing on [rows, classes]
// logits: with one class its sigmoid, with more the softmax over the
// classes, of which it keeps class 1.
func relevance(logits []float32, rows, classes int) []float32 {
	out := make([]float32, rows)
	for r := range rows {
		row := logits[r*classes : (r+1)*classes]
		if classes == 1 {
			out[r] = float32(1 / (1 + math.Exp(-float64(row[0]))))
			continue
		}
		top := float64(slices.Max(row))
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - top)
		}
		out[r] = float32(math.Exp(float64(row[1])-top) / sum)
	}
	return out
}

// compileReranker loads the cross-encoder in dir on device as embedding
// models load (compileEmbedder: static shapes on the NPU). There a pair
// longer than the static length is refused as one past the model's.
func (e *Engine) compileReranker(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*pipeline, error) {
	rr, err := e.embeddingLibrary().openReranker(ctx, dir, device, ir)
	if err != nil {
		return nil, err
	}
	if n := rr.static.length; n > 0 && (rr.maxLength == 0 || rr.maxLength > n) {
		rr.maxLength = n
	}
	return &pipeline{api: e.cfg.Library.api, embed: rr.embedder, rerank: rr, model: dir, device: device}, nil
}

// Rerank implements npu.Reranker for rerank models (the router has loaded
// the model): every document's relevance to query, best first, and the
// tokens the model was given.
func (e *Engine) Rerank(ctx context.Context, model, query string, documents []string) ([]npu.RerankResult, int, error) {
	if err := e.cfg.Library.embeddingSupport(); err != nil {
		return nil, 0, fmt.Errorf("model %q does not support rerank (%w): %w", model, err, npu.ErrNotSupported)
	}
	e.mu.Lock()
	p, ok := e.pipelines[model]
	e.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("model %q is not loaded: %w", model, npu.ErrModelNotFound)
	}
	if p.rerank == nil {
		return nil, 0, &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is not a rerank model: its folder's openvino_model.xml does not take input_ids and attention_mask and give %s", model, modelstore.RerankOutput)}
	}
	if !p.busy.CompareAndSwap(false, true) {
		return nil, 0, fmt.Errorf("openvino: the model %q is being freed or is reranking already", model)
	}
	defer p.busy.Store(false)
	results, tokens, err := p.rerank.rerank(ctx, query, documents)
	var empty *emptyInputError
	var long *TooLongPairError
	switch {
	case err == nil:
		return results, tokens, nil
	case errors.As(err, &empty), errors.As(err, &long), errors.Is(err, ErrTextTooLong):
		return nil, 0, &npu.InvalidRequestError{Param: "documents", Message: err.Error()}
	case ctx.Err() != nil:
		return nil, 0, err
	}
	return nil, 0, &npu.EngineError{Engine: "openvino", Cause: err}
}
