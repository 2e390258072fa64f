package openvino

import (
	"math"

	"github.com/npud/npud/npu/modelstore"
)

// pool turns an embedding model's hidden states ([rows, length, width],
// row-major) into one vector a row, as GenAI's TextEmbeddingPipeline
// post-processes them (openvino.genai src/cpp/src/rag/text_embedding_utils.cpp):
// CLS takes the first position; mean divides the sum over the attention
// mask by the mask's count (at least 1e-12); last token takes the last
// position the mask covers (the batch is padded on the right); then, when
// configured, L2 normalisation with its epsilon of 1e-12 under the sum of
// squares (NormalizeL2, EpsMode MAX). Sums are kept in float64.
func pool(hidden []float32, mask []int64, rows, length, width int, cfg modelstore.EmbeddingConfig) [][]float32 {
	out := make([][]float32, rows)
	sum := make([]float64, width)
	for r := range rows {
		at := func(pos int) []float32 {
			off := (r*length + pos) * width
			return hidden[off : off+width]
		}
		count := 0
		for c := range length {
			count += int(mask[r*length+c])
		}
		clear(sum)
		switch cfg.Pooling {
		case modelstore.PoolMean:
			for c := range length {
				if mask[r*length+c] == 0 {
					continue
				}
				for i, v := range at(c) {
					sum[i] += float64(v)
				}
			}
			n := math.Max(float64(count), 1e-12)
			for i := range sum {
				sum[i] /= n
			}
		case modelstore.PoolLastToken:
			for i, v := range at(max(count-1, 0)) {
				sum[i] = float64(v)
			}
		default: // modelstore.PoolCLS
			for i, v := range at(0) {
				sum[i] = float64(v)
			}
		}
		scale := 1.0
		if cfg.Normalize {
			var sq float64
			for _, v := range sum {
				sq += v * v
			}
			scale = 1 / math.Sqrt(math.Max(sq, 1e-12))
		}
		vec := make([]float32, width)
		for i, v := range sum {
			vec[i] = float32(v * scale)
		}
		out[r] = vec
	}
	return out
}
