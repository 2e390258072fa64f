#!/usr/bin/env python3
"""What the official OpenVINO GenAI tokenizer makes of texts, for npud's
tokenizer tests against the real runtime (npu/openvino's
TestOfficialModelTokenizer, make test-openvino-real).

    python3 genai_tokenizer.py encode FOLDER < texts.json
        prints, for each text of the JSON list, the ids of
        openvino_genai.Tokenizer(FOLDER).encode(text, add_special_tokens=False)
        (what GenAI's pipelines prefill for a templated prompt) and of
        encode(text) (the IR's own special tokens added), as JSON:
        {"without": [[...], ...], "with": [[...], ...]}

    python3 genai_tokenizer.py render FOLDER < conversations.json
        prints, for each conversation of the JSON list ({"messages": [...],
        "tools": [...] or absent, "enable_thinking": true, false or absent}),
        the text openvino_genai.Tokenizer(FOLDER).apply_chat_template
        renders with the generation prompt, as a JSON list of strings.

    python3 genai_tokenizer.py add-special FOLDER OUT BOS EOS
        writes to OUT a copy of the model folder FOLDER whose tokenizer adds
        BOS before every text and EOS after it, as a converted Llama-style
        tokenizer does (openvino-tokenizers' CombineSegments with constant
        special-token segments around the text; GenAI's
        MakeAddSpecialTokensSatateful pass recognises them as such,
        src/cpp/src/tokenizer/make_tokenizer_stateful.cpp). The tiny model's
        own tokenizer adds nothing.
"""
import json
import os
import shutil
import sys

import numpy as np
import openvino as ov
import openvino_genai
import openvino_tokenizers


def encode(folder):
    texts = json.load(sys.stdin)
    tok = openvino_genai.Tokenizer(folder)
    ids = lambda t: [int(x) for x in t.input_ids.data.reshape(-1)]
    json.dump({"without": [ids(tok.encode(t, add_special_tokens=False)) for t in texts],
               "with": [ids(tok.encode(t)) for t in texts]}, sys.stdout)


def render(folder):
    conversations = json.load(sys.stdin)
    tok = openvino_genai.Tokenizer(folder)
    out = []
    for c in conversations:
        extra = {"enable_thinking": c["enable_thinking"]} if "enable_thinking" in c else {}
        out.append(tok.apply_chat_template(openvino_genai.ChatHistory(c["messages"]), add_generation_prompt=True,
                                           tools=c.get("tools", []), extra_context=extra))
    json.dump(out, sys.stdout)


def add_special(folder, out, bos, eos):
    from openvino import opset13 as ops

    const = lambda v: ops.constant(np.array(v, dtype=np.int32)).output(0)
    model = ov.Core().read_model(os.path.join(folder, "openvino_tokenizer.xml"))
    (combine,) = [n for n in model.get_ops() if n.get_type_name() == "CombineSegments"]
    # The text's segment: begin, end, data; then the segment ids.
    text = [combine.input_value(i) for i in range(3)]
    segments = [const(0), const(1), const([bos])] + text + [const(0), const(1), const([eos]), const([0, 0, 0])]
    new = openvino_tokenizers._get_factory().create("CombineSegments", segments)
    for i in range(combine.get_output_size()):
        for target in list(combine.output(i).get_target_inputs()):
            target.replace_source_output(new.output(i))
    # The truncation lengths leave room for the added tokens, as a
    # converted tokenizer's do (INT_MAX would overflow in GenAI's padding
    # pass once two tokens are added).
    (select,) = [n for n in model.get_ops() if n.get_type_name() == "Select"]
    for i in (1, 2):
        value = int(select.input_value(i).get_node().get_data())
        select.input(i).replace_source_output(const(min(value, 2**31 - 1 - 2)))
    model.validate_nodes_and_infer_types()
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(folder):
        if name not in ("openvino_tokenizer.xml", "openvino_tokenizer.bin"):
            shutil.copy(os.path.join(folder, name), out)
    ov.serialize(model, os.path.join(out, "openvino_tokenizer.xml"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["encode"] and len(sys.argv) == 3:
        encode(sys.argv[2])
    elif sys.argv[1:2] == ["render"] and len(sys.argv) == 3:
        render(sys.argv[2])
    elif sys.argv[1:2] == ["add-special"] and len(sys.argv) == 6:
        add_special(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
