package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/npud/npud/npu/modelstore"
)

// examineRerankModel checks a cross-encoder's folder: the files an
// embedding model needs, a tokenizer that can pair a query with a document
// (its pair template), and not a Qwen3 reranker, which npud does not serve
// yet.
func examineRerankModel(folder, model string, r *doctorReport, good *int) {
	name := "model " + model
	var missing []string
	for _, f := range embeddingFiles {
		if _, err := os.Stat(filepath.Join(folder, f.file)); err != nil {
			missing = append(missing, f.file+" ("+f.what+")")
		}
	}
	if len(missing) > 0 {
		r.add(name, checkFail, "a rerank model missing "+strings.Join(missing, ", "),
			"pull it again (npud pull OWNER/"+model+"), or export it with optimum-cli, which writes the tokenizer too")
		return
	}
	if modelstore.RerankModelType(folder) == "qwen3" {
		r.add(name, checkFail, "a Qwen3 reranker, which npud does not serve yet",
			"use a BERT or XLM-RoBERTa cross-encoder such as bge-reranker-base")
		return
	}
	if _, err := modelstore.ReadPairTemplate(folder); err != nil {
		r.add(name, checkFail, "a rerank model whose tokenizer cannot pair a query with a document: "+err.Error(),
			"convert the tokenizer again with openvino-tokenizers, which writes processed_post_processor_template")
		return
	}
	r.Models = append(r.Models, model)
	*good++
	r.add(name, checkOK, "a rerank model: IR, weights and tokenizer present; it reranks at /v1/rerank", "")
}
