#!/usr/bin/env python3
"""Makes npud's tiny OpenVINO cross-encoder (rerank model): a random-weight
encoder with the inputs and output of optimum-intel's text-classification
exports of XLM-RoBERTa cross-encoders such as bge-reranker-base (input_ids
and attention_mask in, no token_type_ids; logits [batch, 1] out), and a
tokenizer made from the tiny chat model's (../tinymodel/model/tokenizer.json)
that frames texts and pairs as XLM-RoBERTa's does (<s> A </s> and
<s> A </s></s> B </s>, with <|im_start|> and <|im_end|> standing for <s> and
</s>) and truncates at the model's 64 positions (model_max_length), converted
by openvino-tokenizers.

Run once by a developer (see README.md); the output folder is committed.
Needs openvino and openvino-tokenizers (the versions of ../requirements.txt),
numpy, tokenizers and transformers (for the tokenizer).

    python3 make_tinyrerank.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as op

SEED = 41
HIDDEN = 32
VOCAB = 406  # the tiny chat model's tokenizer: 400 learned entries and 6 added tokens
MAX_POSITIONS = 64  # short, so that the model's length is easy to reach
TOKENIZER = Path(__file__).resolve().parent.parent / "tinymodel" / "model" / "tokenizer.json"
CLS, SEP = "<|im_start|>", "<|im_end|>"  # XLM-RoBERTa's <s> and </s>


def make_model() -> ov.Model:
    rng = np.random.default_rng(SEED)

    def weight(*shape):
        return op.constant(rng.normal(0, 0.5, shape).astype(np.float32))

    ids = op.parameter([-1, -1], ov.Type.i64, name="input_ids")
    mask = op.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    axis0 = op.constant(np.int64(0))
    words = op.gather(weight(VOCAB, HIDDEN), ids, axis0)
    length = op.gather(op.shape_of(ids), op.constant(np.int64(1)), axis0)
    positions = op.range(op.constant(np.int64(0)), length, op.constant(np.int64(1)), ov.Type.i64)
    where = op.gather(weight(MAX_POSITIONS, HIDDEN), positions, axis0)
    x = op.add(words, where)
    # Each token sees the masked mean of the pair (so query and document
    # interact, and padding changes nothing), then the masked mean of the
    # layer's output is classified into one logit.
    m = op.unsqueeze(op.convert(mask, ov.Type.f32), op.constant(np.int64(-1)))
    axis1 = op.constant(np.int64(1))
    count = op.maximum(op.reduce_sum(m, axis1, keep_dims=True), op.constant(np.float32(1)))
    context = op.divide(op.reduce_sum(op.multiply(x, m), axis1, keep_dims=True), count)
    h = op.tanh(op.add(op.add(op.matmul(x, weight(HIDDEN, HIDDEN), False, False),
                              op.matmul(context, weight(HIDDEN, HIDDEN), False, False)), weight(HIDDEN)))
    pooled = op.divide(op.reduce_sum(op.multiply(h, m), axis1, keep_dims=False),
                       op.squeeze(count, axis1))
    logits = op.add(op.matmul(pooled, weight(HIDDEN, 1), False, False), weight(1))
    logits.output(0).get_tensor().set_names({"logits"})
    return ov.Model([op.result(logits)], [ids, mask], "tinyrerank")


def make_tokenizer() -> ov.Model:
    from openvino_tokenizers import convert_tokenizer
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}", pair=f"{CLS} $A {SEP} {SEP} $B {SEP}",
        special_tokens=[(CLS, tok.token_to_id(CLS)), (SEP, tok.token_to_id(SEP))])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=MAX_POSITIONS,
                                 pad_token="<|endoftext|>", truncation_side="right")
    return convert_tokenizer(hf)


def main(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(make_model(), folder / "openvino_model.xml", compress_to_fp16=False)
    ov.save_model(make_tokenizer(), folder / "openvino_tokenizer.xml")
    config = {"architectures": ["XLMRobertaForSequenceClassification"], "model_type": "xlm-roberta", "hidden_size": HIDDEN,
              "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": VOCAB,
              "max_position_embeddings": MAX_POSITIONS, "type_vocab_size": 1,
              "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
