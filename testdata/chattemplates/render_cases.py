"""Renders the conversations given on standard input through OpenVINO GenAI's own
Tokenizer.apply_chat_template (minja, as GenAI's pipelines render a chat) and writes what each
rendered, or the error it raised, to standard output, as JSON. npu/chatfmt's tests generate
conversations, render them with npud's renderers and with this, and compare the two.

    python render_cases.py TOKENIZER_DIR < cases.json > results.json

cases.json: [{"template": "<name of a .jinja file here>", "messages": [...], "tools": [...] or null,
"think": true/false/null, "add_generation_prompt": bool, "bos_token": "...", "eos_token": "...",
"pad_token": "..."}, ...]; results.json: [{"text": "..."} or {"error": "..."}, ...] in that order.
"""
import json
import pathlib
import sys

import openvino_genai


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    tokenizer = openvino_genai.Tokenizer(sys.argv[1])
    templates = {}
    results = []
    for case in json.load(sys.stdin):
        name = case["template"]
        if name not in templates:
            templates[name] = (here / (name + ".jinja")).read_bytes().decode("utf-8")
        extra = {k: case.get(k) or "" for k in ("bos_token", "eos_token", "pad_token")}
        if case.get("think") is not None:
            extra["enable_thinking"] = case["think"]
        try:
            text = tokenizer.apply_chat_template(
                case["messages"],
                add_generation_prompt=case["add_generation_prompt"],
                chat_template=templates[name],
                tools=case.get("tools"),
                extra_context=extra,
            )
            results.append({"text": text})
        except Exception as e:  # the template or GenAI refused the conversation
            results.append({"error": str(e)[-300:]})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
