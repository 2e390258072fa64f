#!/usr/bin/env python3
"""Reranks documents with the official openvino_genai.TextRerankPipeline, for
npud's differential tests (npu/openvino/rerank_official_test.go,
daemon/openvino_rerank_test.go).

    genai_rerank.py FOLDER < {"query": "...", "documents": [...]}

prints {"results": [[index, score], ...], "tokens": [n, ...]}: every document,
best first, and the tokens of each query/document pair as the pipeline's
tokenizer pairs them, truncated as the pipeline truncates them
(truncation=True: openvino.genai src/cpp/src/rag/text_rerank_pipeline.cpp).

Each document is scored in a batch of its own: GenAI 2026.4.1's paired
tokenizer (add_second_input) corrupts memory when a batch's query is longer
than its documents (CombineSegments: "out_offset <= flat_out_size", or glibc
aborting), in Python as in C++. The cross-encoders npud tests with give a
pair the same score alone as in a padded batch, which npud's own tests check.
"""
import json
import sys

import openvino_genai as genai


def main(folder: str):
    req = json.load(sys.stdin)
    query, docs = req["query"], req["documents"]
    pipe = genai.TextRerankPipeline(folder, "CPU", top_n=1)
    tok = genai.Tokenizer(folder, add_second_input=True)
    results, tokens = [], []
    for i, doc in enumerate(docs):
        [(_, score)] = pipe.rerank(query, [doc])
        results.append([i, float(score)])
        enc = tok.encode([query], [doc], truncation=True)
        tokens.append(int(enc.attention_mask.data.sum()))
    # Best first; equal scores keep the documents' order, as npud's do.
    results.sort(key=lambda r: -r[1])
    json.dump({"results": results, "tokens": tokens}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
