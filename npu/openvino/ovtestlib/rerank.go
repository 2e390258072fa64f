package ovtestlib

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// rerankIR is an IR with a cross-encoder's inputs (token_type_ids too, as
// BERT's) and output, as npud tells them apart (modelstore.ReadRerankIR);
// the test core runs it as its cross-encoder.
const rerankIR = `<?xml version="1.0"?>
<net name="rerank" version="11"><layers>
<layer id="0" name="input_ids" type="Parameter" version="opset1"><output><port id="0" precision="I64" names="input_ids"/></output></layer>
<layer id="1" name="attention_mask" type="Parameter" version="opset1"><output><port id="0" precision="I64" names="attention_mask"/></output></layer>
<layer id="2" name="token_type_ids" type="Parameter" version="opset1"><output><port id="0" precision="I64" names="token_type_ids"/></output></layer>
<layer id="3" name="l" type="MatMul" version="opset1"><output><port id="1" precision="FP32" names="logits"/></output></layer>
<layer id="4" name="out" type="Result" version="opset1"/>
</layers></net>
`

// rerankTokenizerIR is a tokenizer adding nothing to one text and joining
// a query and a document as BERT's does ([CLS] query [SEP] document
// [SEP], the document's tokens of type 1), in openvino-tokenizers'
// rt_info.
const rerankTokenizerIR = `<?xml version="1.0"?>
<net name="tokenizer" version="11"><layers/><rt_info>
<processed_post_processor_template value="{&quot;single&quot;: {&quot;ids&quot;: [-1], &quot;type_ids&quot;: [0]}, &quot;pair&quot;: {&quot;ids&quot;: [101, -1, 102, -2, 102], &quot;type_ids&quot;: [0, 0, 0, 1, 1]}}"/>
</rt_info></net>
`

// WriteRerankModel makes a cross-encoder folder the test library runs:
// its IR, a tokenizer pairing as BERT's, and maxLength positions.
func WriteRerankModel(t testing.TB, models, name string, maxLength int) {
	t.Helper()
	dir := filepath.Join(models, name)
	files := map[string]string{
		"openvino_model.xml": rerankIR, "openvino_model.bin": "w", "openvino_tokenizer.xml": rerankTokenizerIR,
		"config.json": `{"model_type": "bert", "max_position_embeddings": ` + strconv.Itoa(maxLength) + `}`,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// RerankPair is the ids and token types the model WriteRerankModel writes
// is given for query and doc.
func RerankPair(query, doc string) (ids, types []int64) {
	q, d := Tokens(query), Tokens(doc)
	ids = append(append(append(append([]int64{101}, q...), 102), d...), 102)
	types = make([]int64, len(ids))
	for i := len(q) + 2; i < len(ids); i++ {
		types[i] = 1
	}
	return ids, types
}

// RerankScore is the relevance npud gives doc for query with the model
// WriteRerankModel writes: the sigmoid of the test core's logit, the mean
// of ovtest_logit_term over the pair's tokens.
func RerankScore(query, doc string) float32 {
	ids, types := RerankPair(query, doc)
	var sum float64
	for i, id := range ids {
		sum += float64(float32(id*3%101)/101-0.5) + 0.25*float64(types[i])
	}
	logit := float32(sum / float64(len(ids)))
	return float32(1 / (1 + math.Exp(-float64(logit))))
}
