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

With size options it makes a larger model of the same kind, outside the
repository, for measuring throughput (docs/PERFORMANCE.md); --heads turns
the layers into BERT's (self-attention with that many heads, a
feed-forward block of 4 × hidden, layer norms). A BERT-base-sized one:

    python3 make_tinyembed.py --hidden 768 --layers 12 --heads 12 \
        --vocab 30522 --max-length 512 /tmp/bertbase-embed

Without options it writes the committed tiny model, byte for byte.
"""
import argparse
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
LAYERS = 1
HEADS = 0  # 0: the tiny model's layer (each token sees the masked mean), not attention
TOKENIZER = Path(__file__).resolve().parent.parent / "tinymodel" / "model"

POOLING = "pooling_mode_mean_tokens"  # sentence-transformers' name of the pooling


def make_model(hidden=HIDDEN, vocab=VOCAB, max_positions=MAX_POSITIONS, layers=LAYERS, heads=HEADS) -> ov.Model:
    rng = np.random.default_rng(SEED)
    # BERT's initialisation keeps a deep, wide model's activations in range;
    # the tiny model keeps the scale it was made with.
    scale = 0.5 if heads == 0 else 0.02

    def weight(*shape):
        return op.constant(rng.normal(0, scale, shape).astype(np.float32))

    ids = op.parameter([-1, -1], ov.Type.i64, name="input_ids")
    mask = op.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    types = op.parameter([-1, -1], ov.Type.i64, name="token_type_ids")
    axis0 = op.constant(np.int64(0))
    words = op.gather(weight(vocab, hidden), ids, axis0)
    kinds = op.gather(weight(2, hidden), types, axis0)
    # Learned positions 0..length-1, as BERT's.
    length = op.gather(op.shape_of(ids), op.constant(np.int64(1)), axis0)
    positions = op.range(op.constant(np.int64(0)), length, op.constant(np.int64(1)), ov.Type.i64)
    where = op.gather(weight(max_positions, hidden), positions, axis0)
    x = op.add(op.add(words, kinds), where)
    if heads == 0:
        for _ in range(layers):
            x = mixing_layer(x, mask, hidden, weight)
    else:
        x = layer_norm(x, hidden)
        for _ in range(layers):
            x = bert_layer(x, mask, hidden, heads, weight)
    out = x
    out.output(0).get_tensor().set_names({"last_hidden_state"})
    result = op.result(out)
    return ov.Model([result], [ids, mask, types], "tinyembed")


def mixing_layer(x, mask, hidden, weight):
    """The tiny model's layer: each token sees the masked mean of the
    sequence, so the output depends on the attention mask as attention's
    does: padding changes nothing."""
    m = op.unsqueeze(op.convert(mask, ov.Type.f32), op.constant(np.int64(-1)))
    axis1 = op.constant(np.int64(1))
    context = op.divide(op.reduce_sum(op.multiply(x, m), axis1, keep_dims=True),
                        op.maximum(op.reduce_sum(m, axis1, keep_dims=True), op.constant(np.float32(1))))
    h = op.add(op.add(op.matmul(x, weight(hidden, hidden), False, False),
                      op.matmul(context, weight(hidden, hidden), False, False)), weight(hidden))
    return op.tanh(h)


def layer_norm(x, hidden):
    """BERT's layer norm over the hidden axis (unit scale, no shift)."""
    return op.mvn(x, op.constant(np.array([-1], np.int64)), True, 1e-12, "inside_sqrt")


def bert_layer(x, mask, hidden, heads, weight):
    """One BERT encoder layer: masked self-attention with heads heads, then
    a feed-forward block of 4 × hidden (GELU), each with a residual and a
    layer norm."""
    def dense(v, n_in, n_out):
        return op.add(op.matmul(v, weight(n_in, n_out), False, False), weight(n_out))

    size = hidden // heads
    split = op.constant(np.array([0, 0, heads, size], np.int64))

    def to_heads(v):  # [batch, length, hidden] -> [batch, heads, length, size]
        return op.transpose(op.reshape(v, split, True), op.constant(np.array([0, 2, 1, 3], np.int64)))

    q, k, v = (to_heads(dense(x, hidden, hidden)) for _ in range(3))
    # Padding gets -10000 added to its scores, as BERT's extended mask.
    keep = op.convert(op.unsqueeze(mask, op.constant(np.array([1, 2], np.int64))), ov.Type.f32)
    bias = op.multiply(op.subtract(op.constant(np.float32(1)), keep), op.constant(np.float32(-10000)))
    att = op.scaled_dot_product_attention(q, k, v, bias, causal=False)
    att = op.reshape(op.transpose(att, op.constant(np.array([0, 2, 1, 3], np.int64))),
                     op.constant(np.array([0, 0, hidden], np.int64)), True)
    x = layer_norm(op.add(x, dense(att, hidden, hidden)), hidden)
    ff = dense(op.gelu(dense(x, hidden, 4 * hidden), "erf"), 4 * hidden, hidden)
    return layer_norm(op.add(x, ff), hidden)


def main(out: Path, hidden=HIDDEN, vocab=VOCAB, max_positions=MAX_POSITIONS, layers=LAYERS, heads=HEADS):
    folder = out
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    model = make_model(hidden, vocab, max_positions, layers, heads)
    ov.save_model(model, folder / "openvino_model.xml", compress_to_fp16=False)
    for name in ("openvino_tokenizer.xml", "openvino_tokenizer.bin"):
        shutil.copyfile(TOKENIZER / name, folder / name)
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": max(heads, 1), "vocab_size": vocab,
              "max_position_embeddings": max_positions, "type_vocab_size": 2}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    pooling = {m: m == POOLING for m in ("pooling_mode_cls_token", "pooling_mode_mean_tokens",
                                         "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                         "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")}
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, **pooling}, indent=2) + "\n")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--hidden", type=int, default=HIDDEN, help="width of the hidden states")
    p.add_argument("--layers", type=int, default=LAYERS)
    p.add_argument("--heads", type=int, default=HEADS, help="attention heads (0: the tiny model's mixing layer)")
    p.add_argument("--vocab", type=int, default=VOCAB, help="rows of the word embeddings (at least the tokenizer's 406)")
    p.add_argument("--max-length", type=int, default=MAX_POSITIONS, help="positions: the model's length")
    a = p.parse_args()
    if a.vocab < VOCAB or a.hidden < 1 or a.layers < 1 or a.max_length < 1 or a.heads < 0 \
            or (a.heads and a.hidden % a.heads):
        sys.exit("need --vocab >= 406, --hidden, --layers, --max-length >= 1, and --hidden a multiple of --heads")
    main(a.out, a.hidden, a.vocab, a.max_length, a.layers, a.heads)
