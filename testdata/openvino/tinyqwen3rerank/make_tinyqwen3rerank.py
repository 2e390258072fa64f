#!/usr/bin/env python3
"""Makes npud's tiny Qwen3-style reranker in its sequence-classification form
(the "-seq-cls-" exports, such as tomaarsen/Qwen3-Reranker-0.6B-seq-cls): a
random-weight decoder-shaped classifier with the inputs and output of
optimum-intel's text-classification export of Qwen3ForSequenceClassification
(input_ids and attention_mask in, logits [batch, 1] out; config.json's
model_type "qwen3"), scoring the last token that is not padding as
Hugging Face's sequence classifiers do (input_ids != pad_token_id), with
positions counted from the start of the padded row, so that padding on the
wrong side or with the wrong id changes the score. Its tokenizer is the tiny
chat model's vocabulary (../tinymodel/model/tokenizer.json) with "yes" and "no"
added (GenAI's TextRerankPipeline looks both up in a Qwen3 folder's vocabulary),
padding on the left, model_max_length 256, converted with its detokenizer by
openvino-tokenizers.

Run once by a developer (see README.md); the output folder is committed.
Needs openvino and openvino-tokenizers (the versions of ../requirements.txt),
numpy, tokenizers and transformers (for the tokenizer).

    python3 make_tinyqwen3rerank.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as op

SEED = 43
HIDDEN = 32
MAX_POSITIONS = 256  # Qwen3's prompt framing is long for a 400-entry vocabulary
TOKENIZER = Path(__file__).resolve().parent.parent / "tinymodel" / "model" / "tokenizer.json"
PAD = "<|endoftext|>"


def make_tokenizer():
    from tokenizers import AddedToken, Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("yes", "no")])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=MAX_POSITIONS, pad_token=PAD,
                                 eos_token="<|im_end|>", padding_side="left", truncation_side="right")
    return hf


def make_model(vocab: int, pad_id: int) -> ov.Model:
    rng = np.random.default_rng(SEED)

    def weight(*shape):
        return op.constant(rng.normal(0, 0.5, shape).astype(np.float32))

    ids = op.parameter([-1, -1], ov.Type.i64, name="input_ids")
    mask = op.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    axis0 = op.constant(np.int64(0))
    axis1 = op.constant(np.int64(1))
    words = op.gather(weight(vocab, HIDDEN), ids, axis0)
    length = op.gather(op.shape_of(ids), axis1, axis0)
    positions = op.range(op.constant(np.int64(0)), length, op.constant(np.int64(1)), ov.Type.i64)
    x = op.add(words, op.gather(weight(MAX_POSITIONS, HIDDEN), positions, axis0))
    # Each token also sees the masked mean of its row.
    m = op.unsqueeze(op.convert(mask, ov.Type.f32), op.constant(np.int64(-1)))
    count = op.maximum(op.reduce_sum(m, axis1, keep_dims=True), op.constant(np.float32(1)))
    context = op.divide(op.reduce_sum(op.multiply(x, m), axis1, keep_dims=True), count)
    h = op.tanh(op.add(op.add(op.matmul(x, weight(HIDDEN, HIDDEN), False, False),
                              op.matmul(context, weight(HIDDEN, HIDDEN), False, False)), weight(HIDDEN)))
    # The last token that is not padding (Qwen3ForSequenceClassification).
    not_pad = op.convert(op.not_equal(ids, op.constant(np.int64(pad_id))), ov.Type.i64)
    last = op.reduce_max(op.multiply(not_pad, op.unsqueeze(positions, axis0)), axis1, keep_dims=True)
    pooled = op.squeeze(op.gather(h, last, axis1, batch_dims=1), axis1)
    logits = op.add(op.matmul(pooled, weight(HIDDEN, 1), False, False), weight(1))
    logits.output(0).get_tensor().set_names({"logits"})
    return ov.Model([op.result(logits)], [ids, mask], "tinyqwen3rerank")


def main(folder: Path):
    from openvino_tokenizers import convert_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    hf = make_tokenizer()
    tokenizer, detokenizer = convert_tokenizer(hf, with_detokenizer=True)
    ov.save_model(tokenizer, folder / "openvino_tokenizer.xml")
    ov.save_model(detokenizer, folder / "openvino_detokenizer.xml")
    pad_id = hf.convert_tokens_to_ids(PAD)
    ov.save_model(make_model(len(hf), pad_id), folder / "openvino_model.xml", compress_to_fp16=False)
    config = {"architectures": ["Qwen3ForSequenceClassification"], "model_type": "qwen3", "hidden_size": HIDDEN,
              "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": len(hf),
              "max_position_embeddings": MAX_POSITIONS, "pad_token_id": pad_id,
              "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
