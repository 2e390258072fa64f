#!/usr/bin/env python3
"""Makes npud's tiny OpenVINO embedding model: a random-weight encoder with
the inputs and output of optimum-intel's feature-extraction exports of BERT
models (input_ids, attention_mask, token_type_ids in; last_hidden_state
out), the tiny chat model's tokenizer (../tinymodel/model, copied), and
sentence-transformers' 1_Pooling/config.json (mean pooling) and
modules.json (then L2 normalisation), as all-MiniLM-L6-v2 has them. The
tests write the other pooling kinds into copies of the folder.

Run once by a developer (see README.md); the output folder is committed.
Needs openvino (the version of ../requirements.txt) and numpy.

    python3 make_tinyembed.py OUT_DIR
"""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as op

SEED = 40
HIDDEN = 32
VOCAB = 406  # the tiny chat model's tokenizer: 400 learned entries and 6 added tokens
MAX_POSITIONS = 64  # short, so that truncation at the model's length is easy to reach
TOKENIZER = Path(__file__).resolve().parent.parent / "tinymodel" / "model"

POOLING = "pooling_mode_mean_tokens"  # sentence-transformers' name of the pooling


def make_model() -> ov.Model:
    rng = np.random.default_rng(SEED)

    def weight(*shape):
        return op.constant(rng.normal(0, 0.5, shape).astype(np.float32))

    ids = op.parameter([-1, -1], ov.Type.i64, name="input_ids")
    mask = op.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    types = op.parameter([-1, -1], ov.Type.i64, name="token_type_ids")
    axis0 = op.constant(np.int64(0))
    words = op.gather(weight(VOCAB, HIDDEN), ids, axis0)
    kinds = op.gather(weight(2, HIDDEN), types, axis0)
    # Learned positions 0..length-1, as BERT's.
    length = op.gather(op.shape_of(ids), op.constant(np.int64(1)), axis0)
    positions = op.range(op.constant(np.int64(0)), length, op.constant(np.int64(1)), ov.Type.i64)
    where = op.gather(weight(MAX_POSITIONS, HIDDEN), positions, axis0)
    x = op.add(op.add(words, kinds), where)
    # Each token sees the masked mean of the sequence, so the output depends
    # on the attention mask as attention's does: padding changes nothing.
    m = op.unsqueeze(op.convert(mask, ov.Type.f32), op.constant(np.int64(-1)))
    axis1 = op.constant(np.int64(1))
    context = op.divide(op.reduce_sum(op.multiply(x, m), axis1, keep_dims=True),
                        op.maximum(op.reduce_sum(m, axis1, keep_dims=True), op.constant(np.float32(1))))
    h = op.add(op.add(op.matmul(x, weight(HIDDEN, HIDDEN), False, False),
                      op.matmul(context, weight(HIDDEN, HIDDEN), False, False)), weight(HIDDEN))
    out = op.tanh(h)
    out.output(0).get_tensor().set_names({"last_hidden_state"})
    result = op.result(out)
    return ov.Model([result], [ids, mask, types], "tinyembed")


def main(out: Path):
    folder = out
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    ov.save_model(make_model(), folder / "openvino_model.xml", compress_to_fp16=False)
    for name in ("openvino_tokenizer.xml", "openvino_tokenizer.bin"):
        shutil.copyfile(TOKENIZER / name, folder / name)
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": HIDDEN,
              "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": VOCAB,
              "max_position_embeddings": MAX_POSITIONS, "type_vocab_size": 2}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    pooling = {m: m == POOLING for m in ("pooling_mode_cls_token", "pooling_mode_mean_tokens",
                                         "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                         "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")}
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": HIDDEN, **pooling}, indent=2) + "\n")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
