#!/usr/bin/env python3
"""Measures openvino_genai.TextEmbeddingPipeline's throughput on the texts
`npud bench --endpoint embeddings` sends, for comparing npud's
/v1/embeddings with it (docs/PERFORMANCE.md).

    genai_embed_bench.py FOLDER [--device CPU] [--inputs 256] [--words 64]
                         [--seed 1] [--batch 32] [--requests N] [--json]
    genai_embed_bench.py --print-inputs [--inputs ...] [--words ...] [--seed ...]

The texts are those of npud bench's Inputs (cli/bench/embed.go): the same
word list and generator (splitmix64), the same seed. They are embedded
with embed_documents, --batch texts a call, --requests calls cycling
through the batches (default: one pass), after one call (the first batch)
that warms the pipeline and is not timed. The pipeline takes the folder's
own pooling (1_Pooling/config.json) and normalisation (modules.json), as
npud does, and no max_length unless --max-length gives one: with one,
GenAI reshapes the model to a bounded length (text_embedding_utils.cpp,
reshape_model), which is slower on CPU, and texts shorter than the
model's length (config.json's max_position_embeddings, where npud cuts)
are not cut either way.
It reports inputs/s, input tokens/s (the pipeline's tokenizer's count),
the latency of a call, and the CPU time of the process per input.
--print-inputs prints the texts as a JSON array and needs no OpenVINO.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

# The list of cli/bench/embed.go's inputWords, in the same order.
WORDS = [
    "the", "model", "runs", "on", "a", "small", "device", "with", "quiet", "power",
    "every", "request", "brings", "text", "to", "embed", "and", "search", "finds", "near",
    "vectors", "in", "an", "index", "of", "documents", "that", "people", "wrote", "about",
    "rivers", "cities", "music", "code", "weather", "trains", "gardens", "history", "light", "stone",
    "green", "fast", "old", "new", "long", "short", "bright", "dark", "warm", "cold",
    "reads", "writes", "keeps", "sends", "counts", "moves", "holds", "opens", "turns", "grows",
    "north", "south", "river", "bridge",
]

MASK = (1 << 64) - 1


def inputs(count: int, words: int, seed: int) -> list[str]:
    """The texts of npud bench's Inputs(count, words, seed)."""
    state = seed & MASK

    def nxt() -> int:
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    return [" ".join(WORDS[nxt() % len(WORDS)] for _ in range(max(words, 1))) for _ in range(count)]


def folder_config(folder: Path):
    """The pooling and normalisation the folder configures, and its length."""
    import openvino_genai as genai

    kinds = genai.TextEmbeddingPipeline.PoolingType
    pooling = kinds.CLS
    pool_file = folder / "1_Pooling" / "config.json"
    if pool_file.exists():
        cfg = json.loads(pool_file.read_text())
        if cfg.get("pooling_mode_mean_tokens"):
            pooling = kinds.MEAN
        elif cfg.get("pooling_mode_lasttoken"):
            pooling = kinds.LAST_TOKEN
    modules = folder / "modules.json"
    normalize = modules.exists() and any(m.get("type", "").endswith("Normalize")
                                         for m in json.loads(modules.read_text()))
    config = folder / "config.json"
    max_length = json.loads(config.read_text()).get("max_position_embeddings") if config.exists() else None
    return pooling, normalize, max_length


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", nargs="?")
    p.add_argument("--device", default="CPU")
    p.add_argument("--inputs", type=int, default=256)
    p.add_argument("--words", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--requests", type=int, default=0, help="embed_documents calls (0: one pass)")
    p.add_argument("--max-length", type=int, default=0, help="the pipeline's max_length (0: unset)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--print-inputs", action="store_true")
    args = p.parse_args()
    texts = inputs(args.inputs, args.words, args.seed)
    if args.print_inputs:
        json.dump(texts, sys.stdout)
        return
    if not args.folder or args.batch <= 0 or not texts:
        sys.exit("need FOLDER, --inputs > 0 and --batch > 0")

    import openvino_genai as genai

    folder = Path(args.folder)
    pooling, normalize, max_length = folder_config(folder)
    options = {"pooling_type": pooling, "normalize": normalize}
    if args.max_length:
        options["max_length"] = args.max_length
    pipe = genai.TextEmbeddingPipeline(str(folder), args.device, **options)
    batches = [texts[i:i + args.batch] for i in range(0, len(texts), args.batch)]
    requests = args.requests or len(batches)
    tok = genai.Tokenizer(str(folder))
    cut = {"max_length": max_length} if max_length else {}
    tokens = [int(tok.encode(b, truncation=True, **cut).attention_mask.data.sum()) for b in batches]

    pipe.embed_documents(batches[0])  # warm-up, not timed
    latencies, embedded, counted = [], 0, 0
    cpu = time.process_time()  # this process's user and system time: OpenVINO's threads too
    start = time.perf_counter()
    for k in range(requests):
        b = batches[k % len(batches)]
        t0 = time.perf_counter()
        vectors = pipe.embed_documents(b)
        latencies.append(time.perf_counter() - t0)
        if len(vectors) != len(b):
            sys.exit(f"{len(vectors)} vectors for {len(b)} texts")
        embedded += len(b)
        counted += tokens[k % len(batches)]
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu

    ms = sorted(x * 1000 for x in latencies)
    report = {"device": args.device, "batch": args.batch, "requests": requests, "inputs": embedded,
              "input_tokens": counted, "seconds": elapsed, "inputs_per_second": embedded / elapsed,
              "input_tokens_per_second": counted / elapsed, "cpu_ms_per_input": cpu * 1000 / embedded,
              "latency_ms": {"p50": ms[len(ms) // 2], "p90": ms[min(len(ms) - 1, int(0.9 * len(ms)))],
                             "max": ms[-1], "mean": statistics.fmean(ms)}}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    print(f"TextEmbeddingPipeline {args.device}  batch {args.batch}  inputs of ~{args.words} words")
    print(f"{elapsed:.1f} s  {requests / elapsed:.2f} req/s  {embedded / elapsed:.2f} inputs/s  "
          f"{counted / elapsed:.1f} input tokens/s  ({embedded} inputs, {counted} tokens)  "
          f"{cpu * 1000 / embedded:.0f} CPU ms/input")
    lat = report["latency_ms"]
    print(f"latency ms  p50 {lat['p50']:.2f}  p90 {lat['p90']:.2f}  max {lat['max']:.2f}  mean {lat['mean']:.2f}")


if __name__ == "__main__":
    main()
