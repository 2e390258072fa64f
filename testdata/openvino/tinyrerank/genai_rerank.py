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

A Qwen3 reranker (config.json's model_type "qwen3") has no paired tokenizer:
its documents are scored in one batch, the query and each document first
framed by the Qwen3-Reranker prompt as GenAI's own tests frame them before
TextRerankPipeline (the model card's format, with its default instruction),
unless the query starts with <|im_start|> (framed by the caller).
"""
import json
import sys
from pathlib import Path

import openvino_genai as genai

QWEN3_SYSTEM = ('<|im_start|>system\nJudge whether the Document meets the requirements based on the Query '
                'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
                '<|im_start|>user\n')
QWEN3_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
QWEN3_ANSWER = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def qwen3(folder: str, query: str, docs: list):
    if not query.startswith("<|im_start|>"):
        query = f"{QWEN3_SYSTEM}<Instruct>: {QWEN3_INSTRUCTION}\n<Query>: {query}\n"
        docs = [f"<Document>: {d}{QWEN3_ANSWER}" for d in docs]
    pipe = genai.TextRerankPipeline(folder, "CPU", top_n=len(docs))
    results = [[int(i), float(s)] for i, s in pipe.rerank(query, docs)]
    tok = genai.Tokenizer(folder)
    tokens = [int(tok.encode([query + d], truncation=True).attention_mask.data.sum()) for d in docs]
    return results, tokens


def main(folder: str):
    req = json.load(sys.stdin)
    query, docs = req["query"], req["documents"]
    if json.loads((Path(folder) / "config.json").read_text()).get("model_type") == "qwen3":
        results, tokens = qwen3(folder, query, docs)
        json.dump({"results": results, "tokens": tokens}, sys.stdout)
        return
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
