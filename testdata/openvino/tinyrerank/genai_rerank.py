#!/usr/bin/env python3
"""Reranks documents with the official openvino_genai.TextRerankPipeline, for
npud's differential test (npu/openvino/rerank_official_test.go).

    genai_rerank.py FOLDER < {"query": "...", "documents": [...]}

prints {"results": [[index, score], ...], "tokens": [n, ...]}: every document
(top_n is their count), best first, and the tokens of each query/document pair
as the pipeline's tokenizer pairs them.
"""
import json
import sys

import openvino_genai as genai


def main(folder: str):
    req = json.load(sys.stdin)
    docs = req["documents"]
    pipe = genai.TextRerankPipeline(folder, "CPU", top_n=len(docs))
    results = pipe.rerank(req["query"], docs)
    tok = genai.Tokenizer(folder, add_second_input=True)
    tokens = []
    for doc in docs:
        enc = tok.encode([req["query"]], [doc])
        tokens.append(int(enc.attention_mask.data.sum()))
    json.dump({"results": [[int(i), float(s)] for i, s in results], "tokens": tokens}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
