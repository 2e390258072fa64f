"""Renders every conversation of corpus.json with every chat template here, through OpenVINO GenAI's
own Tokenizer.apply_chat_template (minja, as GenAI's pipelines render a chat), and writes one JSON file
per template: the reference npud's Go renderers (npu/chatfmt) are compared with byte for byte.

    python render_reference.py TOKENIZER_DIR OUT_DIR

TOKENIZER_DIR is any folder with an openvino_tokenizer.xml (the tiny model's): the template comes
from this folder's .jinja files, and the family's bos/eos/pad tokens from specials.json are given to
the template through extra_context, which GenAI applies after its own
(src/cpp/src/tokenizer/tokenizer_impl.cpp, apply_chat_template).
"""
import hashlib
import json
import pathlib
import sys

import openvino_genai


def minja_error(message: str) -> str:
    """The template's own words from GenAI's exception: what follows "Minja's error: " up to " at row"."""
    _, _, rest = message.partition("Minja's error: ")
    return (rest or message).split(" at row ")[0].strip()[:300]


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    tokenizer = openvino_genai.Tokenizer(sys.argv[1])
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    corpus = json.loads((here / "corpus.json").read_text(encoding="utf-8"))["cases"]
    specials = json.loads((here / "specials.json").read_text(encoding="utf-8"))
    for name, spec in sorted(specials.items()):
        template = (here / (name + ".jinja")).read_bytes().decode("utf-8")
        results = []
        for case in corpus:
            extra = {k: spec[k] or "" for k in ("bos_token", "eos_token", "pad_token")}
            if case.get("think") is not None:
                extra["enable_thinking"] = case["think"]
            try:
                text = tokenizer.apply_chat_template(
                    case["messages"],
                    add_generation_prompt=case["add_generation_prompt"],
                    chat_template=template,
                    tools=case.get("tools"),
                    extra_context=extra,
                )
                results.append({"name": case["name"], "text": text})
            except Exception as e:  # the template refused the conversation (raise_exception)
                results.append({"name": case["name"], "error": minja_error(str(e))})
        doc = {
            "template": name + ".jinja",
            "sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
            "rendered_by": "openvino_genai " + openvino_genai.__version__,
            "cases": results,
        }
        (out / (name + ".json")).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
