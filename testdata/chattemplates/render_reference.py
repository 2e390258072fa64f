"""Renders every conversation of corpus.json with every chat template here, through OpenVINO GenAI's
own Tokenizer.apply_chat_template (minja, as GenAI's pipelines render a chat), and writes one JSON file
per template: the reference npud's Go renderers (npu/chatfmt) are compared with byte for byte.

    python render_reference.py TOKENIZER_DIR OUT_DIR [CORPUS]

CORPUS is corpus.json unless named (npu/chatfmt's tests render generated conversations too).
TOKENIZER_DIR is any folder with an openvino_tokenizer.xml and openvino_detokenizer.xml (the tiny
model's): the template comes from this folder's .jinja files. Each template is rendered by a
tokenizer of that folder whose special tokens are the family's (specials.json, in a
special_tokens_map.json beside links to the tokenizer's files), as a model of the family has them:
GenAI builds minja's template with the tokenizer's own bos and eos (tokenizer_impl.cpp,
get_cached_minja_chat_template), and minja's tool polyfill writes that eos into its tool call
example. The same tokens go to the template through extra_context, as GenAI gives them
(apply_chat_template).

A template that asks strftime_now for the date (Llama 3.2) writes the day it is rendered on, in
local time: its golden file records that day ("today", as the template's "%d %b %Y" writes it),
and the renderers are checked at that date.
"""
import hashlib
import json
import pathlib
import sys
import tempfile
import time

import openvino_genai


def minja_error(message: str) -> str:
    """The template's own words from GenAI's exception: what follows "Minja's error: " up to " at row"."""
    _, _, rest = message.partition("Minja's error: ")
    return (rest or message).split(" at row ")[0].strip()[:300]


TOKENIZER_FILES = ("openvino_tokenizer.xml", "openvino_tokenizer.bin", "openvino_detokenizer.xml", "openvino_detokenizer.bin")


def family_tokenizer(model_dir: pathlib.Path, spec: dict, folder: pathlib.Path) -> openvino_genai.Tokenizer:
    """The model's tokenizer with the family's special tokens as text."""
    folder.mkdir()
    for name in TOKENIZER_FILES:
        (folder / name).symlink_to(model_dir.resolve() / name)
    tokens = {k: {"content": spec[k]} for k in ("bos_token", "eos_token", "pad_token") if spec[k]}
    (folder / "special_tokens_map.json").write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8")
    return openvino_genai.Tokenizer(str(folder))


def tools_in_system_message(case: dict) -> tuple:
    """npud's input for a template that reads its tools from the system message (Phi-4-mini's,
    "tools_in_system_message" in specials.json): each tool's function object in a JSON list, as
    json.dumps writes it, in the system message's "tools" (a system message of npud's words added
    when there is none), and no tools variable (npu/chatfmt/phi4mini.go)."""
    tools = case.get("tools")
    if not tools:
        return case["messages"], None
    messages = [dict(m) for m in case["messages"]]
    if not messages or messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": "You are a helpful assistant with some tools."})
    messages[0]["tools"] = json.dumps([t["function"] for t in tools], ensure_ascii=False)
    return messages, None


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    model_dir = pathlib.Path(sys.argv[1])
    scratch = tempfile.TemporaryDirectory()
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    corpus_path = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else here / "corpus.json"
    corpus = json.loads(corpus_path.read_text(encoding="utf-8"))["cases"]
    specials = json.loads((here / "specials.json").read_text(encoding="utf-8"))
    for name, spec in sorted(specials.items()):
        template = (here / (name + ".jinja")).read_bytes().decode("utf-8")
        tokenizer = family_tokenizer(model_dir, spec, pathlib.Path(scratch.name) / name)
        today = time.strftime("%d %b %Y") if "strftime_now" in template else None
        results = []
        for case in corpus:
            extra = {k: spec[k] or "" for k in ("bos_token", "eos_token", "pad_token")}
            if case.get("think") is not None:
                extra["enable_thinking"] = case["think"]
            messages, tools = case["messages"], case.get("tools")
            if spec.get("tools_in_system_message"):
                messages, tools = tools_in_system_message(case)
            try:
                text = tokenizer.apply_chat_template(
                    messages,
                    add_generation_prompt=case["add_generation_prompt"],
                    chat_template=template,
                    tools=tools,
                    extra_context=extra,
                )
                results.append({"name": case["name"], "text": text})
            except Exception as e:  # the template refused the conversation (raise_exception)
                results.append({"name": case["name"], "error": minja_error(str(e))})
        doc = {
            "template": name + ".jinja",
            "sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
            "rendered_by": "openvino_genai " + openvino_genai.__version__,
        }
        if today is not None:
            doc["today"] = today
        doc["cases"] = results
        (out / (name + ".json")).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
