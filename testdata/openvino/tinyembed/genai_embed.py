#!/usr/bin/env python3
"""Embeds texts with the official openvino_genai.TextEmbeddingPipeline, for
npud's differential test (npu/openvino/embed_official_test.go).

    genai_embed.py FOLDER < {"texts": [...], "pooling": "cls|mean|last_token",
                             "normalize": bool, "max_length": int}

prints {"vectors": [[...], ...], "tokens": [n, ...]}: each text's vector,
and the tokens the pipeline's tokenizer gives it with the same truncation.
"""
import json
import sys

import openvino_genai as genai

POOLING = {
    "cls": genai.TextEmbeddingPipeline.PoolingType.CLS,
    "mean": genai.TextEmbeddingPipeline.PoolingType.MEAN,
    "last_token": genai.TextEmbeddingPipeline.PoolingType.LAST_TOKEN,
}


def main(folder: str):
    req = json.load(sys.stdin)
    pipe = genai.TextEmbeddingPipeline(folder, "CPU", pooling_type=POOLING[req["pooling"]],
                                       normalize=req["normalize"], max_length=req["max_length"])
    vectors = pipe.embed_documents(req["texts"])
    tok = genai.Tokenizer(folder)
    tokens = []
    for text in req["texts"]:
        enc = tok.encode(text, max_length=req["max_length"], truncation=True)
        tokens.append(int(enc.attention_mask.data.sum()))
    json.dump({"vectors": [[float(x) for x in v] for v in vectors], "tokens": tokens}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
