package modelstore

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RerankOutput is the output of a cross-encoder's IR that npud scores: the
// classifier's logits, the name optimum-intel gives them in a
// text-classification export and the one GenAI's TextRerankPipeline reads
// (openvino.genai src/cpp/src/rag/text_rerank_pipeline.cpp:
// get_tensor("logits")). An embedding model gives last_hidden_state
// instead: the output tells the two apart.
const RerankOutput = "logits"

// ErrNotRerank is wrapped when a folder's IR is not a cross-encoder's.
var ErrNotRerank = errors.New("not a rerank model")

// IsRerankModel reports whether the model folder dir holds a rerank model
// (ReadRerankIR).
func IsRerankModel(dir string) bool {
	_, err := ReadRerankIR(dir)
	return err == nil
}

// ReadRerankIR reads the model folder dir's openvino_model.xml and tells
// whether it is a cross-encoder: inputs input_ids and attention_mask (and
// token_type_ids where the model has it), none of a language model's
// inputs (so Qwen3-Reranker's causal-LM export is not one), and an output
// named logits (RerankOutput).
func ReadRerankIR(dir string) (EmbeddingIR, error) {
	return readEncoderIR(dir, RerankOutput, ErrNotRerank)
}

// PairTemplate is how a tokenizer joins a query and a document into one
// sequence: Ids holds -1 for the query's tokens, -2 for the document's,
// and the ids of special tokens; TypeIDs the token type of each entry.
type PairTemplate struct {
	Ids     []int64 `json:"ids"`
	TypeIDs []int64 `json:"type_ids"`
	// SingleSpecials is how many special tokens the tokenizer adds around
	// one text (its single template's): its truncation length leaves room
	// for them (Truncation.MaxLength).
	SingleSpecials int `json:"-"`
}

// Specials is how many special tokens the template adds around a pair.
func (p PairTemplate) Specials() int { return len(p.Ids) - 2 }

// ReadPairTemplate reads the pair entry of the processed_post_processor_template
// that openvino-tokenizers writes into the rt_info of the folder dir's
// openvino_tokenizer.xml: what GenAI's AddSecondInputPass builds a
// tokenizer's second input from (openvino.genai
// src/cpp/src/tokenizer/add_second_input_pass.cpp reads its pair "ids" and
// "type_ids"), which TextRerankPipeline asks for (add_second_input).
func ReadPairTemplate(dir string) (PairTemplate, error) {
	path := filepath.Join(dir, "openvino_tokenizer.xml")
	f, err := os.Open(path)
	if err != nil {
		return PairTemplate{}, err
	}
	defer func() { _ = f.Close() }() // read only
	dec := xml.NewDecoder(bufio.NewReader(io.LimitReader(f, maxIRBytes)))
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return PairTemplate{}, fmt.Errorf("%s: no processed_post_processor_template: the tokenizer cannot pair a query with a document", path)
		}
		if err != nil {
			return PairTemplate{}, fmt.Errorf("%s: %w", path, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "processed_post_processor_template" {
			continue
		}
		var tmpl struct {
			Pair   *PairTemplate `json:"pair"`
			Single *struct {
				Ids []int64 `json:"ids"`
			} `json:"single"`
		}
		if err := json.Unmarshal([]byte(attr(el, "value")), &tmpl); err != nil {
			return PairTemplate{}, fmt.Errorf("%s: processed_post_processor_template: %w", path, err)
		}
		p := tmpl.Pair
		if p == nil || len(p.TypeIDs) != len(p.Ids) || count(p.Ids, -1) != 1 || count(p.Ids, -2) != 1 {
			return PairTemplate{}, fmt.Errorf("%s: processed_post_processor_template has no pair of one query and one document with their type ids", path)
		}
		if tmpl.Single != nil && count(tmpl.Single.Ids, -1) == 1 {
			p.SingleSpecials = len(tmpl.Single.Ids) - 1
		}
		return *p, nil
	}
}

func count(ids []int64, v int64) int {
	n := 0
	for _, id := range ids {
		if id == v {
			n++
		}
	}
	return n
}

// RerankMaxLength is the most tokens one query/document pair is given to
// the cross-encoder in dir: its config.json's max_position_embeddings, 0
// when it does not say.
func RerankMaxLength(dir string) int {
	var hf hfConfig
	if readJSON(filepath.Join(dir, "config.json"), &hf) == nil && hf.MaxPositionEmbeddings > 0 {
		return hf.MaxPositionEmbeddings
	}
	return 0
}

// RerankModelType is the model_type in the folder dir's config.json.
func RerankModelType(dir string) string {
	var hf hfConfig
	_ = readJSON(filepath.Join(dir, "config.json"), &hf)
	return hf.ModelType
}
