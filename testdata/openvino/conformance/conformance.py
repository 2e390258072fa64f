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
TURN1, TURN2 = "hello there", "and the weather?"

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

# Chat templates of each tool family's shape, written for this suite (not
# any model's): one reads `tools` and writes calls as <tool_call> (Qwen,
# Hermes), one as <|python_tag|> (Llama 3), one as [TOOL_CALLS] (Mistral),
# and one never reads `tools` but a system message's "tools" field and
# writes <|tool_call|> (Phi-4-mini's shape).
TEMPLATES = {
    "hermes": "{%- if tools %}Tools:{% for t in tools %} {{ t.function.name }}{% endfor %}. Call as <tool_call>{}</tool_call>\n"
              "{%- endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
              "{% if add_generation_prompt %}assistant:{% endif %}",
    "llama3": "{%- if tools %}You may call:{% for t in tools %} {{ t.function.name }}{% endfor %}; start a call with <|python_tag|>\n"
              "{%- endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
              "{% if add_generation_prompt %}assistant:{% endif %}",
    "mistral": "{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
               "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}[TOOL_CALLS] marks a call."
               "{% if add_generation_prompt %}assistant:{% endif %}",
    "phi4": "{% for m in messages %}{% if m.role == 'system' and 'tools' in m and m.tools %}<|system|>{{ m.content }}"
            "<|tool|>{{ m.tools }}<|/tool|><|end|>{% else %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endif %}{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %} Calls look like <|tool_call|>.",
}
# What each template writes when it renders the tools itself.
NATIVE = {"hermes": "Tools: get_weather", "llama3": "You may call: get_weather", "mistral": "[AVAILABLE_TOOLS]",
          "phi4": "<|tool|>"}
# How the tools are given: set_tools, and/or the system message's "tools"
# field (what npud does for Phi-4-mini's family).
WAYS = {"set_tools only": (True, False), "set_tools and the system message": (True, True),
        "the system message only": (False, True)}
# The tags a Qwen-family model writes around its reasoning and its calls,
# and an answer holding them as the test model writes one.
TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>")
TAGGED = '<think>\nthe weather\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


# Prompts npud renders itself and gives GenAI through its prompt view (the
# model's folder with a pass-through chat template in the tokenizer IR's
# rt_info, npu/openvino/promptview.go): the tiny model's Qwen3 template's
# shapes, and text of every kind. GenAI counts each as its tokenizer
# encodes it (num_input_tokens); the test library with the folder's
# tokenizer.json (testdata/ovgenai/ovbpe_test.c).
RENDERED = {
    "say hello": "<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n",
    "thinking off": "<|im_start|>user\nSay hello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "a tool": "<|im_start|>system\n# Tools\n\n<tools>\n" + json.dumps(TOOLS[0]) + "\n</tools><|im_end|>\n"
              "<|im_start|>user\nWhat's the weather in Paris?<|im_end|>\n<|im_start|>assistant\n"
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\n<tool_response>\n{\"temp_c\": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
    "numbers, punctuation, whitespace": "<|im_start|>user\nIt's 2048 tokens; don't   stop!!!\n\n\t(see [1], {2})   <|im_end|>\n",
    "non-ASCII": "<|im_start|>user\ncafé 日本 🙂 naïve — Zürich\u00a0ß<|im_end|>\n<|im_start|>assistant\n",
}
PASS_THROUGH = "{% for message in messages %}{{ message.content }}{% endfor %}"


def prompt_view(model, tmp):
    """npud's prompt view of the model folder (npu/openvino/promptview.go)."""
    d = os.path.join(tmp, "prompt-view")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(model):
        if f != "openvino_tokenizer.xml":
            os.symlink(os.path.abspath(os.path.join(model, f)), os.path.join(d, f))
    with open(os.path.join(model, "openvino_tokenizer.xml"), encoding="utf-8") as f:
        ir = f.read()
    element = '<chat_template value="' + PASS_THROUGH + '" />'  # nothing in it to escape
    start = ir.find("<chat_template ")
    if start >= 0:
        ir = ir[:start] + element + ir[start + ir[start:].index("/>") + 2:]
    else:
        at = ir.rindex("</rt_info>")
        ir = ir[:at] + element + ir[at:]
    with open(os.path.join(d, "openvino_tokenizer.xml"), "w", encoding="utf-8") as f:
        f.write(ir)
    return d


def generation_config_folder(model, tmp, name, settings):
    """The model's folder with a generation_config.json of its own."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(model):
        if f != "generation_config.json":
            os.symlink(os.path.abspath(os.path.join(model, f)), os.path.join(d, f))
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": 2, **settings}, f)
    return d


def max_length_observables(prompt_tokens, run):
    """What max_length in generation_config.json does (GenerationConfig::
    get_max_new_tokens, generation_config.cpp): run(settings) generates
    PROMPT without a max_new_tokens of its own and answers (input tokens,
    generated tokens), or None when the generate fails."""
    out = {}
    room = run({"max_length": prompt_tokens + 5})
    out["max_length 5 past the prompt: prompt + answer == max_length"] = room is not None and sum(room) == prompt_tokens + 5
    out["max_length equal to the prompt: the generate fails"] = run({"max_length": prompt_tokens}) is None
    both = run({"max_length": prompt_tokens + 5, "max_new_tokens": 2})
    out["max_new_tokens 2 and max_length: max_new_tokens wins"] = both is not None and both[1] == 2
    return out


def tool_messages(in_system):
    system = {"role": "system", "content": "You are terse."}
    if in_system:
        system["tools"] = json.dumps(TOOLS, separators=(",", ":"))  # what npud does for Phi-4-mini's family
    return [system, {"role": "user", "content": "What is the weather in Paris?"}]


def template_folder(model, shape, tmp):
    """The model's folder with this shape's chat template."""
    d = os.path.join(tmp, shape)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(model):
        if f not in ("chat_template.jinja", "tokenizer_config.json"):
            os.symlink(os.path.abspath(os.path.join(model, f)), os.path.join(d, f))
    with open(os.path.join(d, "chat_template.jinja"), "w") as f:
        f.write(TEMPLATES[shape])
    return d


# Differences that are understood: scenario key -> why.
KNOWN = {
    # minja's polyfill writes the tools into the system message in its own
    # words when the template does not render them; the test model does
    # not read that text (it calls only when its template shows the tool).
    "template phi4, set_tools only: minja's polyfill shows the tool": "not modelled: the test model "
    "answers a call only when the template shows the tool in its own format; minja "
    "(openvino.genai src/cpp/src/tokenizer/tokenizer_impl.cpp, minja/chat-template.hpp) then describes "
    "the tools in its own words, whether a real Phi-4-mini would call from that text is the model's",
    "template phi4, set_tools and the system message: minja's polyfill shows the tool": "as above",
    "template phi4, the system message only: minja's polyfill shows the tool": "as above (here it does not "
    "show them: without set_tools there is nothing to polyfill)",
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

    # History continuation: a second turn on the same pipeline, against the
    # same history on a fresh one (which prefills all of it).
    for backend in ("SDPA", "PA"):
        def turn2(pipe, first):
            c = pipe.get_generation_config()
            c.max_new_tokens = 5
            h = g.ChatHistory([{"role": "user", "content": TURN1}])
            if first is None:
                first = pipe.generate(h, c).texts[0]
                h.append({"role": "assistant", "content": first})
                h.append({"role": "user", "content": TURN2})
                return first, pipe.generate(h, c).perf_metrics.get_num_input_tokens()
            h.append({"role": "assistant", "content": first})
            h.append({"role": "user", "content": TURN2})
            return first, pipe.generate(h, c).perf_metrics.get_num_input_tokens()
        first, continued = turn2(g.LLMPipeline(model, "CPU", ATTENTION_BACKEND=backend), None)
        _, fresh = turn2(g.LLMPipeline(model, "CPU", ATTENTION_BACKEND=backend), first)
        out[f"chat turn 2 on CPU, {backend}: counts only the new part"] = continued < fresh

    tok = pipe.get_tokenizer()
    # Do the tags reach the answer's text? GenAI detokenizes an answer with
    # the folder's detokenizer, which skips special tokens (its rt_info
    # skip_special_tokens); Qwen2.5 and Qwen3 add these tags as tokens that
    # are not special, and so does the tiny model.
    ids = tok.encode(TAGGED).input_ids.data[0].tolist()
    out["the answer keeps <think> and <tool_call>"] = all(t in tok.decode(ids) for t in TAGS)

    # enable_thinking through the history's extra context: may the model
    # think (the tiny model's template, Qwen3's, closes an empty think block
    # when it is false)?
    for extra in (None, {"enable_thinking": True}, {"enable_thinking": False}):
        h = g.ChatHistory([{"role": "user", "content": TURN1}])
        if extra:
            h.set_extra_context(extra)
        prompt = tok.apply_chat_template(h, True, "", None, h.get_extra_context())
        out[f"extra context {json.dumps(extra)}: the model thinks"] = "<think>\n\n</think>" not in prompt

    # Does the model see the tool? What GenAI's template engine renders
    # for a history with set_tools (as generate with a ChatHistory does:
    # the history's tools and extra context go to apply_chat_template).
    for shape, template in TEMPLATES.items():
        for way, (set_tools, in_system) in WAYS.items():
            h = g.ChatHistory(tool_messages(in_system))
            if set_tools:
                h.set_tools(TOOLS)
            h.set_extra_context({"enable_thinking": False})
            prompt = tok.apply_chat_template(h, True, template, h.get_tools() or None, h.get_extra_context())
            out[f"template {shape}, {way}: the template shows the tool"] = NATIVE[shape] in prompt
            if shape == "phi4":
                # minja's tool polyfill: its own text in the system message.
                out[f"template {shape}, {way}: minja's polyfill shows the tool"] = \
                    "You can call any of the following tools" in prompt

    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        view = g.LLMPipeline(prompt_view(model, tmp), "CPU")
        c = view.get_generation_config()
        c.max_new_tokens = 1
        for name, text in RENDERED.items():
            m = view.generate([text], c).perf_metrics
            out[f"a rendered prompt through the prompt view, {name}: num_input_tokens"] = m.get_num_input_tokens()

        def run(settings):
            folder = generation_config_folder(model, tmp, "gen-" + "-".join(f"{k}{v}" for k, v in settings.items()), settings)
            p = g.LLMPipeline(folder, "CPU")
            try:
                m = p.generate([PROMPT], p.get_generation_config()).perf_metrics
            except Exception:
                return None
            return m.get_num_input_tokens(), m.get_num_generated_tokens()
        c = pipe.get_generation_config()
        c.max_new_tokens = 1
        prompt_tokens = pipe.generate([PROMPT], c).perf_metrics.get_num_input_tokens()
        out.update(max_length_observables(prompt_tokens, run))
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

    # The test model answers with a call of the tool when it saw it.
    def json_container(value):
        j = P()
        # Compact, as npud writes it: the test library keeps the JSON text as
        # given and finds names in it by their compact spelling, where
        # GenAI parses it (JsonContainer); not modelled, npud sends compact.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        ok(lib.ov_genai_json_container_create_from_json_string(ctypes.byref(j), text.encode()), "json")
        return j

    def history(messages):
        h = P()
        ok(lib.ov_genai_chat_history_create(ctypes.byref(h)), "chat_history_create")
        for m in messages:
            j = json_container(m)
            ok(lib.ov_genai_chat_history_push_back(h, j), "push_back")
            lib.ov_genai_json_container_free(j)
        return h

    def chat(pipe, messages, max_new):
        h = history(messages)
        c = P()
        ok(lib.ov_genai_llm_pipeline_get_generation_config(pipe, ctypes.byref(c)), "config")
        ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(max_new)), "max_new_tokens")
        results = P()
        ok(lib.ov_genai_llm_pipeline_generate_with_history(pipe, h, c, None, ctypes.byref(results)), "generate_with_history")
        size = ctypes.c_size_t()
        ok(lib.ov_genai_decoded_results_get_string(results, None, ctypes.byref(size)), "size")
        buf = ctypes.create_string_buffer(size.value)
        ok(lib.ov_genai_decoded_results_get_string(results, buf, ctypes.byref(size)), "get_string")
        metrics = P()
        ok(lib.ov_genai_decoded_results_get_perf_metrics(results, ctypes.byref(metrics)), "perf_metrics")
        n = ctypes.c_size_t()
        ok(lib.ov_genai_perf_metrics_get_num_input_tokens(metrics, ctypes.byref(n)), "num_input_tokens")
        lib.ov_genai_decoded_results_perf_metrics_free(metrics)
        lib.ov_genai_decoded_results_free(results)
        lib.ov_genai_generation_config_free(c)
        lib.ov_genai_chat_history_free(h)
        return buf.value.decode("utf-8"), n.value

    for backend in ("SDPA", "PA"):
        def new_pipe():
            pp = P()
            ok(lib.ov_genai_llm_pipeline_create(model.encode(), b"CPU", ctypes.c_size_t(2), ctypes.byref(pp),
                                                b"ATTENTION_BACKEND", backend.encode()), "create")
            return pp
        one, two = new_pipe(), new_pipe()
        first, _ = chat(one, [{"role": "user", "content": TURN1}], 5)
        msgs = [{"role": "user", "content": TURN1}, {"role": "assistant", "content": first}, {"role": "user", "content": TURN2}]
        _, continued = chat(one, msgs, 5)
        _, fresh = chat(two, msgs, 5)
        out[f"chat turn 2 on CPU, {backend}: counts only the new part"] = continued < fresh
        lib.ov_genai_llm_pipeline_free(one)
        lib.ov_genai_llm_pipeline_free(two)

    # The test model starts its answer with a think block when it thinks.
    tpipe = P()
    ok(lib.ov_genai_llm_pipeline_create(model.encode(), b"CPU", ctypes.c_size_t(0), ctypes.byref(tpipe)), "create")
    # The model's own template (Qwen3's) thinks and shows the tool: the
    # test model answers with both tags.
    h = history([{"role": "user", "content": "What is the weather in Paris?"}])
    j = json_container(TOOLS)
    ok(lib.ov_genai_chat_history_set_tools(h, j), "set_tools")
    lib.ov_genai_json_container_free(j)
    c = P()
    ok(lib.ov_genai_llm_pipeline_get_generation_config(tpipe, ctypes.byref(c)), "config")
    ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(80)), "max_new_tokens")
    results = P()
    ok(lib.ov_genai_llm_pipeline_generate_with_history(tpipe, h, c, None, ctypes.byref(results)), "generate_with_history")
    size = ctypes.c_size_t()
    ok(lib.ov_genai_decoded_results_get_string(results, None, ctypes.byref(size)), "size")
    buf = ctypes.create_string_buffer(size.value)
    ok(lib.ov_genai_decoded_results_get_string(results, buf, ctypes.byref(size)), "get_string")
    out["the answer keeps <think> and <tool_call>"] = all(t.encode() in buf.value for t in TAGS)
    lib.ov_genai_decoded_results_free(results)
    lib.ov_genai_generation_config_free(c)
    lib.ov_genai_chat_history_free(h)
    for extra in (None, {"enable_thinking": True}, {"enable_thinking": False}):
        h = history([{"role": "user", "content": TURN1}])
        if extra:
            j = json_container(extra)
            ok(lib.ov_genai_chat_history_set_extra_context(h, j), "set_extra_context")
            lib.ov_genai_json_container_free(j)
        c = P()
        ok(lib.ov_genai_llm_pipeline_get_generation_config(tpipe, ctypes.byref(c)), "config")
        ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(20)), "max_new_tokens")
        results = P()
        ok(lib.ov_genai_llm_pipeline_generate_with_history(tpipe, h, c, None, ctypes.byref(results)), "generate_with_history")
        size = ctypes.c_size_t()
        ok(lib.ov_genai_decoded_results_get_string(results, None, ctypes.byref(size)), "size")
        buf = ctypes.create_string_buffer(size.value)
        ok(lib.ov_genai_decoded_results_get_string(results, buf, ctypes.byref(size)), "get_string")
        out[f"extra context {json.dumps(extra)}: the model thinks"] = buf.value.startswith(b"<think>")
        lib.ov_genai_decoded_results_free(results)
        lib.ov_genai_generation_config_free(c)
        lib.ov_genai_chat_history_free(h)
    lib.ov_genai_llm_pipeline_free(tpipe)

    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for shape in TEMPLATES:
            folder = template_folder(model, shape, tmp)
            tpipe = P()
            ok(lib.ov_genai_llm_pipeline_create(folder.encode(), b"CPU", ctypes.c_size_t(0), ctypes.byref(tpipe)), "create " + shape)
            for way, (set_tools, in_system) in WAYS.items():
                h = P()
                ok(lib.ov_genai_chat_history_create(ctypes.byref(h)), "chat_history_create")
                for m in tool_messages(in_system):
                    j = json_container(m)
                    ok(lib.ov_genai_chat_history_push_back(h, j), "push_back")
                    lib.ov_genai_json_container_free(j)
                setters = [("ov_genai_chat_history_set_extra_context", {"enable_thinking": False})]
                if set_tools:
                    setters.append(("ov_genai_chat_history_set_tools", TOOLS))
                for setter, value in setters:
                    j = json_container(value)
                    ok(getattr(lib, setter)(h, j), setter)
                    lib.ov_genai_json_container_free(j)
                c = P()
                ok(lib.ov_genai_llm_pipeline_get_generation_config(tpipe, ctypes.byref(c)), "config")
                ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(40)), "max_new_tokens")
                results = P()
                ok(lib.ov_genai_llm_pipeline_generate_with_history(tpipe, h, c, None, ctypes.byref(results)), "generate_with_history " + shape)
                size = ctypes.c_size_t()
                ok(lib.ov_genai_decoded_results_get_string(results, None, ctypes.byref(size)), "size")
                buf = ctypes.create_string_buffer(size.value)
                ok(lib.ov_genai_decoded_results_get_string(results, buf, ctypes.byref(size)), "get_string")
                out[f"template {shape}, {way}: the template shows the tool"] = b"get_weather" in buf.value
                lib.ov_genai_decoded_results_free(results)
                lib.ov_genai_generation_config_free(c)
                lib.ov_genai_chat_history_free(h)
            lib.ov_genai_llm_pipeline_free(tpipe)

        vpipe = P()
        ok(lib.ov_genai_llm_pipeline_create(prompt_view(model, tmp).encode(), b"CPU", ctypes.c_size_t(0), ctypes.byref(vpipe)), "create view")
        for name, text in RENDERED.items():
            c = P()
            ok(lib.ov_genai_llm_pipeline_get_generation_config(vpipe, ctypes.byref(c)), "config")
            ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(1)), "max_new_tokens")
            results = P()
            ok(lib.ov_genai_llm_pipeline_generate(vpipe, text.encode(), c, None, ctypes.byref(results)), "generate " + name)
            metrics = P()
            ok(lib.ov_genai_decoded_results_get_perf_metrics(results, ctypes.byref(metrics)), "perf_metrics")
            n = ctypes.c_size_t()
            ok(lib.ov_genai_perf_metrics_get_num_input_tokens(metrics, ctypes.byref(n)), "num_input_tokens")
            out[f"a rendered prompt through the prompt view, {name}: num_input_tokens"] = n.value
            lib.ov_genai_decoded_results_perf_metrics_free(metrics)
            lib.ov_genai_decoded_results_free(results)
            lib.ov_genai_generation_config_free(c)
        lib.ov_genai_llm_pipeline_free(vpipe)

        def run(settings):
            folder = generation_config_folder(model, tmp, "gen-" + "-".join(f"{k}{v}" for k, v in settings.items()), settings)
            p = P()
            ok(lib.ov_genai_llm_pipeline_create(folder.encode(), b"CPU", ctypes.c_size_t(0), ctypes.byref(p)), "create")
            c = P()
            ok(lib.ov_genai_llm_pipeline_get_generation_config(p, ctypes.byref(c)), "config")
            results = P()
            st = lib.ov_genai_llm_pipeline_generate(p, PROMPT.encode(), c, None, ctypes.byref(results))
            counts = None
            if st == 0:
                metrics = P()
                ok(lib.ov_genai_decoded_results_get_perf_metrics(results, ctypes.byref(metrics)), "perf_metrics")
                i, n = ctypes.c_size_t(), ctypes.c_size_t()
                ok(lib.ov_genai_perf_metrics_get_num_input_tokens(metrics, ctypes.byref(i)), "num_input_tokens")
                ok(lib.ov_genai_perf_metrics_get_num_generation_tokens(metrics, ctypes.byref(n)), "num_generation_tokens")
                counts = (i.value, n.value)
                lib.ov_genai_decoded_results_perf_metrics_free(metrics)
                lib.ov_genai_decoded_results_free(results)
            lib.ov_genai_generation_config_free(c)
            lib.ov_genai_llm_pipeline_free(p)
            return counts
        p = P()
        ok(lib.ov_genai_llm_pipeline_create(model.encode(), b"CPU", ctypes.c_size_t(0), ctypes.byref(p)), "create")
        c = P()
        ok(lib.ov_genai_llm_pipeline_get_generation_config(p, ctypes.byref(c)), "config")
        ok(lib.ov_genai_generation_config_set_max_new_tokens(c, ctypes.c_size_t(1)), "max_new_tokens")
        results = P()
        ok(lib.ov_genai_llm_pipeline_generate(p, PROMPT.encode(), c, None, ctypes.byref(results)), "generate")
        metrics = P()
        ok(lib.ov_genai_decoded_results_get_perf_metrics(results, ctypes.byref(metrics)), "perf_metrics")
        i = ctypes.c_size_t()
        ok(lib.ov_genai_perf_metrics_get_num_input_tokens(metrics, ctypes.byref(i)), "num_input_tokens")
        lib.ov_genai_decoded_results_perf_metrics_free(metrics)
        lib.ov_genai_decoded_results_free(results)
        lib.ov_genai_generation_config_free(c)
        lib.ov_genai_llm_pipeline_free(p)
        out.update(max_length_observables(i.value, run))
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
