package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/npud/npud/npu/modelstore"
)

// examineRerankModel checks a cross-encoder's folder: the files an
// embedding model needs, and a tokenizer that can pair a query with a
// document (its pair template) or, for a Qwen3 reranker (whose query and
// document are one text), one that pads and truncates as npud can read.
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
		_, err := modelstore.ReadPadding(folder)
		if err == nil {
			_, err = modelstore.ReadTruncation(folder)
		}
		if err != nil {
			r.add(name, checkFail, "a Qwen3 reranker whose tokenizer npud cannot read: "+err.Error(),
				"convert the tokenizer again with openvino-tokenizers")
			return
		}
	} else if _, err := modelstore.ReadPairTemplate(folder); err != nil {
		r.add(name, checkFail, "a rerank model whose tokenizer cannot pair a query with a document: "+err.Error(),
			"convert the tokenizer again with openvino-tokenizers, which writes processed_post_processor_template")
		return
	}
	r.Models = append(r.Models, model)
	*good++
	r.add(name, checkOK, "a rerank model: IR, weights and tokenizer present; it reranks at /v1/rerank", "")
}
