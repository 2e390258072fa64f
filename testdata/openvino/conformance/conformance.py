#!/usr/bin/env python3
"""Differential conformance: each scenario runs against the official
OpenVINO GenAI (its Python API, CPU, the tiny model of ../tinymodel) and
against npud's GenAI test library (its C API through ctypes, on the same
model folder), each side in a process of its own, and the observables
must be equal. A difference the CPU cannot show the same way as the NPU,
or that the test library does not model, is listed in KNOWN with the
upstream file that explains it.

    python3 conformance.py --model DIR --testlib DIR   # compare, exit 1 on a difference
    python3 conformance.py --side real|testlib --model DIR [--testlib DIR]   # one side, JSON out

Run by npu/openvino's TestOfficialConformance (make test-openvino-real).
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

SIZE_MAX = 2**64 - 1
N = 12  # tokens per streamed generation
PROMPT = "hello there"

# (name, settings): which generation configs validate() accepts
# (openvino.genai src/cpp/src/generation_config.cpp, GenerationConfig::validate).
VALIDATE = [
    ("greedy defaults", {}),
    ("max_new_tokens 0", {"max_new_tokens": 0}),
    ("sampling, temperature 0", {"do_sample": True, "temperature": 0.0}),
    ("greedy, temperature 0", {"do_sample": False, "temperature": 0.0}),
    ("sampling, top_p 0", {"do_sample": True, "top_p": 0.0}),
    ("sampling, top_p 1", {"do_sample": True, "top_p": 1.0}),
    ("sampling, top_p 1.5", {"do_sample": True, "top_p": 1.5}),
    ("greedy, top_p 1.5", {"do_sample": False, "top_p": 1.5}),
    ("sampling, top_k 0", {"do_sample": True, "top_k": 0}),
    ("sampling, min_p 1", {"do_sample": True, "min_p": 1.0}),
    ("sampling, min_p -0.1", {"do_sample": True, "min_p": -0.1}),
    ("repetition_penalty 0", {"repetition_penalty": 0.0}),
    ("repetition_penalty 0.5", {"repetition_penalty": 0.5}),
    ("presence_penalty 2", {"presence_penalty": 2.0}),
    ("presence_penalty 3", {"presence_penalty": 3.0}),
    ("frequency_penalty -2", {"frequency_penalty": -2.0}),
    ("frequency_penalty -2.5", {"frequency_penalty": -2.5}),
]

# Differences that are understood: scenario key -> why.
KNOWN = {
    "stream: callbacks": "the words differ: the tiny model's greedy answer is ASCII (one callback per token "
    "from the third on, then the final flush: N-1), the test model's holds 日本 and an emoji of two byte-fallback "
    "tokens, held back while incomplete (openvino.genai src/cpp/src/text_streamer.cpp), so fewer callbacks",
}


def streamed(chunks, text, generated):
    """What a streamed generation shows, independent of the model's words."""
    return {
        "empty_chunks": sum(1 for c in chunks if c == ""),
        "chunks_equal_text": "".join(chunks) == text,
        "generated": generated,
        # The last tokens are held back and flushed at the end: never a
        # callback per token.
        "callbacks_below_generated": len(chunks) < generated,
    }


def stopped(chunks, stop_at, text, generated):
    return {
        "callbacks_after_answer": len(chunks) - stop_at,
        "text_starts_with_streamed_before_final": text.startswith("".join(chunks[:stop_at])),
        "generated_at_least_streamed_callbacks": generated >= stop_at,
    }


# ---- the official GenAI, through its Python API ----

def run_real(model):
    import openvino_genai as g

    out = {}
    pipe = g.LLMPipeline(model, "CPU", ATTENTION_BACKEND="SDPA")
    out["default max_new_tokens"] = pipe.get_generation_config().max_new_tokens

    for name, settings in VALIDATE:
        c = pipe.get_generation_config()
        for k, v in settings.items():
            setattr(c, k, v)
        try:
            c.validate()
            out["validate: " + name] = True
        except Exception:
            out["validate: " + name] = False

    def generate(config, answer):
        chunks = []

        def cb(s):
            chunks.append(s)
            return answer(len(chunks))

        r = pipe.generate([PROMPT], config, streamer=cb)
        return chunks, r.texts[0], r.perf_metrics

    c = pipe.get_generation_config()
    c.max_new_tokens = N
    chunks, text, m = generate(c, lambda n: g.StreamingStatus.RUNNING)
    out["stream"] = streamed(chunks, text, m.get_num_generated_tokens())
    out["stream: callbacks"] = len(chunks)
    for status in ("STOP", "CANCEL"):
        chunks, text, m = generate(c, lambda n, s=status: getattr(g.StreamingStatus, s) if n == 2 else g.StreamingStatus.RUNNING)
        out[status] = stopped(chunks, 2, text, m.get_num_generated_tokens())

    c.max_new_tokens = 1
    _, _, m = generate(c, lambda n: g.StreamingStatus.RUNNING)
    out["one token: tpot"] = [m.get_tpot().mean, m.get_tpot().std]
    out["one token: ttft positive"] = m.get_ttft().mean > 0
    return out


# ---- npud's test library, through the C API ----

class Streamer(ctypes.Structure):
    CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    _fields_ = [("callback_func", CALLBACK), ("args", ctypes.c_void_p)]


def run_testlib(model, libdir):
    ctypes.CDLL(os.path.join(libdir, "libopenvino_c.so"))
    lib = ctypes.CDLL(os.path.join(libdir, "libopenvino_genai_c.so"))
    P = ctypes.c_void_p

    def ok(status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}")

    pipe = P()
    ok(lib.ov_genai_llm_pipeline_create(model.encode(), b"CPU", ctypes.c_size_t(2), ctypes.byref(pipe),
                                        b"ATTENTION_BACKEND", b"SDPA"), "create")

    def config():
        c = P()
        ok(lib.ov_genai_llm_pipeline_get_generation_config(pipe, ctypes.byref(c)), "get_generation_config")
        return c

    setters = {
        "max_new_tokens": ("ov_genai_generation_config_set_max_new_tokens", ctypes.c_size_t),
        "do_sample": ("ov_genai_generation_config_set_do_sample", ctypes.c_bool),
        "temperature": ("ov_genai_generation_config_set_temperature", ctypes.c_float),
        "top_p": ("ov_genai_generation_config_set_top_p", ctypes.c_float),
        "top_k": ("ov_genai_generation_config_set_top_k", ctypes.c_size_t),
        "min_p": ("ov_genai_generation_config_set_min_p", ctypes.c_float),
        "repetition_penalty": ("ov_genai_generation_config_set_repetition_penalty", ctypes.c_float),
        "presence_penalty": ("ov_genai_generation_config_set_presence_penalty", ctypes.c_float),
        "frequency_penalty": ("ov_genai_generation_config_set_frequency_penalty", ctypes.c_float),
    }

    out = {}
    c = config()
    n = ctypes.c_size_t()
    ok(lib.ov_genai_generation_config_get_max_new_tokens(c, ctypes.byref(n)), "get_max_new_tokens")
    out["default max_new_tokens"] = n.value
    lib.ov_genai_generation_config_free(c)

    for name, settings in VALIDATE:
        c = config()
        for k, v in settings.items():
            fn, typ = setters[k]
            ok(getattr(lib, fn)(c, typ(v)), fn)
        out["validate: " + name] = lib.ov_genai_generation_config_validate(c) == 0
        lib.ov_genai_generation_config_free(c)

    def generate(max_new, answer):
        c = config()
        ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(max_new)), "set_max_new_tokens")
        chunks = []

        @Streamer.CALLBACK
        def cb(s, _):
            chunks.append(s.decode("utf-8"))
            return answer(len(chunks))

        streamer = Streamer(cb, None)
        results = P()
        ok(lib.ov_genai_llm_pipeline_generate(pipe, PROMPT.encode(), c, ctypes.byref(streamer), ctypes.byref(results)), "generate")
        size = ctypes.c_size_t()
        ok(lib.ov_genai_decoded_results_get_string(results, None, ctypes.byref(size)), "get_string size")
        buf = ctypes.create_string_buffer(size.value)
        ok(lib.ov_genai_decoded_results_get_string(results, buf, ctypes.byref(size)), "get_string")
        metrics = P()
        ok(lib.ov_genai_decoded_results_get_perf_metrics(results, ctypes.byref(metrics)), "get_perf_metrics")
        generated = ctypes.c_size_t()
        ok(lib.ov_genai_perf_metrics_get_num_generation_tokens(metrics, ctypes.byref(generated)), "num_generation_tokens")
        ttft, ttft_std, tpot, tpot_std = (ctypes.c_float() for _ in range(4))
        ok(lib.ov_genai_perf_metrics_get_ttft(metrics, ctypes.byref(ttft), ctypes.byref(ttft_std)), "ttft")
        ok(lib.ov_genai_perf_metrics_get_tpot(metrics, ctypes.byref(tpot), ctypes.byref(tpot_std)), "tpot")
        lib.ov_genai_decoded_results_perf_metrics_free(metrics)
        lib.ov_genai_decoded_results_free(results)
        lib.ov_genai_generation_config_free(c)
        return chunks, buf.value.decode("utf-8"), generated.value, (ttft.value, tpot.value, tpot_std.value)

    chunks, text, generated, _ = generate(N, lambda n: 0)
    out["stream"] = streamed(chunks, text, generated)
    out["stream: callbacks"] = len(chunks)
    for status, code in (("STOP", 1), ("CANCEL", 2)):
        chunks, text, generated, _ = generate(N, lambda n, code=code: code if n == 2 else 0)
        out[status] = stopped(chunks, 2, text, generated)
    _, _, _, (ttft, tpot, tpot_std) = generate(1, lambda n: 0)
    out["one token: tpot"] = [tpot, tpot_std]
    out["one token: ttft positive"] = ttft > 0
    lib.ov_genai_llm_pipeline_free(pipe)
    return out


def side(args, which):
    cmd = [sys.executable, os.path.abspath(__file__), "--side", which, "--model", args.model]
    if args.testlib:
        cmd += ["--testlib", args.testlib]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"the {which} side failed:\n{p.stdout}\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--testlib")
    ap.add_argument("--side", choices=["real", "testlib"])
    args = ap.parse_args()
    if args.side == "real":
        print(json.dumps(run_real(args.model)))
        return
    if args.side == "testlib":
        print(json.dumps(run_testlib(args.model, args.testlib)))
        return
    real, ours = side(args, "real"), side(args, "testlib")
    differences = 0
    for key in real:
        same = real[key] == ours.get(key)
        mark = "same" if same else ("known" if key in KNOWN else "DIFFERENT")
        print(f"{mark:9} {key}: real {json.dumps(real[key])}" + ("" if same else f", test library {json.dumps(ours.get(key))}"))
        if not same and key in KNOWN:
            print(f"          {KNOWN[key]}")
        differences += not same and key not in KNOWN
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
