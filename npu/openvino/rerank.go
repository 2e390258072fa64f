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
	// budget is the most tokens of query and document together, the
	// pair's special tokens not counted; 0: no bound but the batch's.
	budget int
	// cut is how the tokenizer truncates a pair when asked to (its side
	// and mode; budget is its length).
	cut modelstore.Truncation
	// pad is how the tokenizer pads a batch, which npud's batches follow.
	pad modelstore.Padding
	// qwen3: a Qwen3 reranker (sequence-classification form), whose query
	// and document are one text (rerank_qwen3.go); pair and cut's mode are
	// unused, and budget bounds the text.
	qwen3 bool
}

// openReranker compiles the cross-encoder in dir for device, and its
// tokenizer on the CPU. TextRerankPipeline pairs a query with a document
// in the tokenizer (add_second_input, from the tokenizer's
// processed_post_processor_template) for every model but Qwen3, whose
// query and document it concatenates instead (openQwen3Reranker).
func (l *Library) openReranker(ctx context.Context, dir, device string, ir modelstore.EmbeddingIR) (*reranker, error) {
	if modelstore.RerankModelType(dir) == "qwen3" {
		return l.openQwen3Reranker(ctx, dir, device, ir)
	}
	pair, err := modelstore.ReadPairTemplate(dir)
	if err != nil {
		return nil, err
	}
	budget, cut, err := pairBudget(dir, pair)
	if err != nil {
		return nil, err
	}
	pad, err := modelstore.ReadPadding(dir)
	if err != nil { // a cross-encoder's padding is masked out: any will do
		pad = modelstore.Padding{}
	}
	emb, err := l.openEmbedder(ctx, dir, device, ir)
	if err != nil {
		return nil, err
	}
	return &reranker{embedder: emb, pair: pair, budget: budget, cut: cut, pad: pad}, nil
}

// specials are the special tokens every scored sequence has besides the
// budget's text: the pair template's, or a Qwen3 reranker's one text's.
func (r *reranker) specials() int {
	if r.qwen3 {
		return len(r.tok.prefix) + len(r.tok.suffix)
	}
	return r.pair.Specials()
}

// pairBudget is the most tokens of a query and a document together that
// the cross-encoder in dir is given, and how its tokenizer cuts a pair to
// that. TextRerankPipeline tokenizes with truncation on
// (text_rerank_pipeline.cpp: m_tokenization_params truncation=true, no
// max_length), so the bound is the tokenizer's own: the length of its
// Truncate operation (model_max_length less the special tokens around one
// text, as openvino-tokenizers converts it), less the further special
// tokens of a pair, which GenAI's AddSecondInputPass subtracts when it
// adds the second input (add_second_input_pass.cpp, "Adjust truncation
// values"). Positions bound it too (config.json's max_position_embeddings,
// less the pair's special tokens), for a tokenizer with no length or one
// longer than the model; a tokenizer with no Truncate npud can read cuts
// as Hugging Face's default does (the longest first, on the right).
func pairBudget(dir string, pair modelstore.PairTemplate) (int, modelstore.Truncation, error) {
	cut, err := modelstore.ReadTruncation(dir)
	if errors.Is(err, modelstore.ErrNoTruncation) {
		cut, err = modelstore.Truncation{Mode: "longest_first"}, nil
	}
	if err != nil {
		return 0, cut, err
	}
	budget, bounded := 0, false
	if cut.MaxLength > 0 {
		budget, bounded = cut.MaxLength-(pair.Specials()-pair.SingleSpecials), true
	}
	if positions := modelstore.RerankMaxLength(dir); positions > 0 && (!bounded || positions-pair.Specials() < budget) {
		budget, bounded = positions-pair.Specials(), true
	}
	if bounded && budget < 2 {
		return 0, cut, fmt.Errorf("%s: the model takes %d tokens of a query and a document: too few for both", dir, budget)
	}
	return budget, cut, nil
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

// TooLongPairError is a query/document pair over the model's length when
// the client did not ask for truncation (npu.RerankRequest.Truncate).
type TooLongPairError struct {
	Index, Tokens, Max int
}

func (e *TooLongPairError) Error() string {
	return fmt.Sprintf("document %d with the query is %d tokens, more than the model's %d: "+
		"shorten it, or set truncate to true to have it cut as the model's tokenizer cuts a pair", e.Index, e.Tokens, e.Max)
}

// truncatePair cuts query and document so that together they are at most
// budget tokens, as openvino-tokenizers' Truncate cuts a pair
// (src/truncate.cpp): "longest_first" leaves a part shorter than half
// whole and gives the other the rest, else halves the budget, the odd
// token to the longer part (to the query on a tie); "only_first" and
// "only_second" cut only that part, and only when it alone is over.
// cut.Left keeps each part's end instead of its start.
func truncatePair(q, d []int64, budget int, cut modelstore.Truncation) ([]int64, []int64) {
	nq, nd := len(q), len(d)
	if nq+nd <= budget {
		return q, d
	}
	half, odd := budget/2, budget%2
	switch cut.Mode {
	case "only_first":
		nq = min(nq, budget)
	case "only_second":
		nd = min(nd, budget)
	default: // longest_first
		switch {
		case nq >= half+odd && nd <= half:
			nq = budget - nd
		case nq < half+odd && nd > half:
			nd = budget - nq
		default:
			extraQ, extraD := 0, 0
			if nq >= nd {
				extraQ = odd
			} else {
				extraD = odd
			}
			nq, nd = half+extraQ, half+extraD
		}
	}
	keep := func(s []int64, n int) []int64 {
		if cut.Left {
			return s[len(s)-n:]
		}
		return s[:n]
	}
	return keep(q, nq), keep(d, nd)
}

// rerank scores every document against query and returns them best
// first (a stable sort: equal scores keep the documents' order), and the
// tokens the model was given (every pair's, special tokens included).
func (r *reranker) rerank(ctx context.Context, query string, docs []string, truncate bool) (npu.Reranked, error) {
	if len(docs) > npu.MaxRerankDocuments {
		return npu.Reranked{}, fmt.Errorf("%d documents, more than %d", len(docs), npu.MaxRerankDocuments)
	}
	if r.qwen3 {
		return r.rerankQwen3(ctx, query, docs, truncate)
	}
	q, err := r.tok.Encode(ctx, query)
	if err != nil {
		return npu.Reranked{}, fmt.Errorf("query: %w", err)
	}
	seqs := make([][]int64, len(docs))
	kinds := make([][]int64, len(docs))
	total, truncated := 0, 0
	for i, doc := range docs {
		d, err := r.tok.Encode(ctx, doc)
		if err != nil {
			return npu.Reranked{}, fmt.Errorf("document %d: %w", i, err)
		}
		if r.budget > 0 && len(q)+len(d) > r.budget {
			if !truncate {
				return npu.Reranked{}, &TooLongPairError{Index: i, Tokens: len(q) + len(d) + r.pair.Specials(), Max: r.budget + r.pair.Specials()}
			}
			qi, di := truncatePair(q, d, r.budget, r.cut)
			if len(qi)+len(di) > r.budget { // only_first or only_second could not cut enough
				return npu.Reranked{}, &TooLongPairError{Index: i, Tokens: len(qi) + len(di) + r.pair.Specials(), Max: r.budget + r.pair.Specials()}
			}
			seqs[i], kinds[i] = r.pairTokens(qi, di)
			truncated++
		} else {
			seqs[i], kinds[i] = r.pairTokens(q, d)
		}
		if len(seqs[i]) == 0 {
			return npu.Reranked{}, &emptyInputError{index: i}
		}
		total += len(seqs[i])
	}
	results, err := r.scoreAll(ctx, seqs, kinds)
	if err != nil {
		return npu.Reranked{}, err
	}
	return npu.Reranked{Results: results, PromptTokens: total, Truncated: truncated}, nil
}

// scoreAll scores every sequence in batches and sorts them best first (a
// stable sort: equal scores keep the documents' order).
func (r *reranker) scoreAll(ctx context.Context, seqs, kinds [][]int64) ([]npu.RerankResult, error) {
	results := make([]npu.RerankResult, 0, len(seqs))
	for start := 0; start < len(seqs); {
		end, longest := start, 0
		for end < len(seqs) && end-start < maxRerankBatch && (end-start+1)*max(longest, len(seqs[end])) <= maxRerankBatchTokens {
			longest = max(longest, len(seqs[end]))
			end++
		}
		if end == start { // one pair over the token budget alone: run it alone
			longest, end = len(seqs[start]), start+1
		}
		var batchKinds [][]int64 // none for a Qwen3 reranker
		if kinds != nil {
			batchKinds = kinds[start:end]
		}
		scores, err := r.score(ctx, seqs[start:end], batchKinds, longest)
		if err != nil {
			return nil, err
		}
		for i, s := range scores {
			results = append(results, npu.RerankResult{Index: start + i, Score: s})
		}
		start = end
	}
	slices.SortStableFunc(results, func(a, b npu.RerankResult) int { return cmp.Compare(b.Score, a.Score) })
	return results, nil
}

// score runs one batch: sequences padded to length as the tokenizer pads
// a batch (its side and pad id, mask 0: GenAI's tokenizer pads the batch
// it gives the model so, and a Qwen3 classifier finds its last token by
// the pad id), their token types where the model takes them, and turns
// the logits into scores as TextRerankPipeline's post-processing does: the
// sigmoid of a single logit, else the softmax's second class.
func (r *reranker) score(ctx context.Context, seqs, kinds [][]int64, length int) ([]float32, error) {
	rows := len(seqs)
	ids := make([]int64, rows*length)
	mask := make([]int64, rows*length)
	var types []int64
	if r.ir.HasInput("token_type_ids") {
		types = make([]int64, rows*length)
	}
	for row, s := range seqs {
		at := row * length // where the row's tokens start
		if r.pad.Left {
			at += length - len(s)
		}
		for c := row * length; c < (row+1)*length; c++ {
			ids[c] = r.pad.ID
		}
		copy(ids[at:], s)
		if types != nil && kinds != nil {
			copy(types[at:], kinds[row])
		}
		for c := range s {
			mask[at+c] = 1
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
	if n := rr.static.length - rr.specials(); rr.static.length > 0 && (rr.budget == 0 || rr.budget > n) {
		if n < 2 {
			_ = rr.close()
			return nil, fmt.Errorf("%s: the NPU's static length %d leaves %d tokens for a query and a document", dir, rr.static.length, n)
		}
		rr.budget = n
	}
	return &pipeline{api: e.cfg.Library.api, embed: rr.embedder, rerank: rr, model: dir, device: device}, nil
}

// Rerank implements npu.Reranker for rerank models (the router has loaded
// the model): every document's relevance to query, best first, and the
// tokens the model was given.
func (e *Engine) Rerank(ctx context.Context, model, query string, documents []string, truncate bool) (npu.Reranked, error) {
	if err := e.cfg.Library.embeddingSupport(); err != nil {
		return npu.Reranked{}, fmt.Errorf("model %q does not support rerank (%w): %w", model, err, npu.ErrNotSupported)
	}
	e.mu.Lock()
	p, ok := e.pipelines[model]
	e.mu.Unlock()
	if !ok {
		return npu.Reranked{}, fmt.Errorf("model %q is not loaded: %w", model, npu.ErrModelNotFound)
	}
	if p.rerank == nil {
		return npu.Reranked{}, &npu.InvalidRequestError{Param: "model", Message: fmt.Sprintf(
			"model %q is not a rerank model: its folder's openvino_model.xml does not take input_ids and attention_mask and give %s", model, modelstore.RerankOutput)}
	}
	if !p.busy.CompareAndSwap(false, true) {
		return npu.Reranked{}, fmt.Errorf("openvino: the model %q is being freed or is reranking already", model)
	}
	defer p.busy.Store(false)
	out, err := p.rerank.rerank(ctx, query, documents, truncate)
	var empty *emptyInputError
	var long *TooLongPairError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &empty), errors.As(err, &long), errors.Is(err, ErrTextTooLong):
		return npu.Reranked{}, &npu.InvalidRequestError{Param: "documents", Message: err.Error()}
	case ctx.Err() != nil:
		return npu.Reranked{}, err
	}
	return npu.Reranked{}, &npu.EngineError{Engine: "openvino", Cause: err}
}
