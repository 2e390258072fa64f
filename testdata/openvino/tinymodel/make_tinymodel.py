#!/usr/bin/env python3
"""Makes npud's tiny OpenVINO model: a random-weight decoder with one
attention layer, stateful as optimum-intel exports decoders (inputs
input_ids, attention_mask, position_ids, beam_idx; the KV cache in
ReadValue/Assign variables; logits out), a byte-level BPE tokenizer
trained on the text below, converted to OpenVINO tokenizer and
detokenizer models with openvino-tokenizers, and the published Qwen3 chat
template (../../chattemplates/Qwen--Qwen3-1.7B.jinja, unmodified) with
Qwen's <think> and <tool_call> tags as non-special added tokens.

Run once by a developer (see README.md); the output folder is committed.
Needs: openvino, openvino-tokenizers (the versions of
../requirements.txt), tokenizers and transformers (for the tokenizer
conversion only). Random weights answer nonsense; the conformance suite
checks behaviour, not text.

    python3 make_tinymodel.py OUT_DIR
"""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as op
from openvino.op.util import Variable, VariableInfo

SEED = 26
HIDDEN = 16
MAX_POSITIONS = 2048

# The text the tokenizer learns from: written for this model.
CORPUS = """
npud serves local language models to Ollama and OpenAI clients.
It streams every answer token by token, and a client may stop it at any time.
The model here is tiny and its weights are random, so it answers nonsense.
That is fine: the tests look at how text arrives, not at what it says.
Tools are functions a model may call; it writes a call as JSON.
A model may think before it answers, between think tags.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 1000.
Punctuation, quotes "like this", brackets [a] {b} (c), and a newline.
Emoji and accents: café, naïve, 東京, 🙂.
"""

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Added as Qwen2.5's and Qwen3's tokenizer.json add them: whole tokens, not
# special ("special": false), so a detokenizer that skips special tokens
# (GenAI's, skip_special_tokens) keeps them in the text.
ADDED = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# The published Qwen3 chat template, unmodified (testdata/chattemplates,
# SOURCES.md); specials.json records its SHA-256, checked before use.
TEMPLATES = Path(__file__).resolve().parent.parent.parent / "chattemplates"
TEMPLATE_NAME = "Qwen--Qwen3-1.7B"


def chat_template() -> str:
    raw = (TEMPLATES / (TEMPLATE_NAME + ".jinja")).read_bytes()
    want = json.loads((TEMPLATES / "specials.json").read_text())[TEMPLATE_NAME]["sha256"]
    if hashlib.sha256(raw).hexdigest() != want:
        sys.exit(f"{TEMPLATE_NAME}.jinja is not the published template (SHA-256 differs from specials.json)")
    return raw.decode("utf-8")


def make_tokenizer(out: Path):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS] * 4, trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    template = chat_template()
    hf.chat_template = template
    # The template in tokenizer_config.json and in chat_template.jinja, as
    # Qwen3's folder and optimum-intel's export carry it.
    hf.save_pretrained(out, save_jinja_files=False)
    (out / "chat_template.jinja").write_bytes(template.encode("utf-8"))
    return hf


def make_model(vocab: int) -> ov.Model:
    rng = np.random.default_rng(SEED)

    def weight(*shape):
        return op.constant((rng.standard_normal(shape) * 0.5).astype(np.float32))

    input_ids = op.parameter([-1, -1], ov.Type.i64, name="input_ids")
    attention_mask = op.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    position_ids = op.parameter([-1, -1], ov.Type.i64, name="position_ids")
    beam_idx = op.parameter([-1], ov.Type.i32, name="beam_idx")
    for p, name in ((input_ids, "input_ids"), (attention_mask, "attention_mask"),
                    (position_ids, "position_ids"), (beam_idx, "beam_idx")):
        p.output(0).get_tensor().set_names({name})

    embed = weight(vocab, HIDDEN)
    x = op.gather(embed, input_ids, op.constant(0))
    x = op.add(x, op.gather(weight(MAX_POSITIONS, HIDDEN), position_ids, op.constant(0)))

    # One head of HIDDEN: [B, T, D] -> [B, 1, T, D].
    def head(t):
        return op.unsqueeze(op.matmul(t, weight(HIDDEN, HIDDEN), False, False), op.constant(1))

    q, k, v = head(x), head(x), head(x)
    batch = op.gather(op.shape_of(input_ids), op.constant([0]), op.constant(0))
    empty = op.concat([batch, op.constant(np.array([1, 0, HIDDEN], dtype=np.int64))], 0)
    sinks = []

    def cached(new, name):
        info = VariableInfo()
        info.data_shape = ov.PartialShape([-1, 1, -1, HIDDEN])
        info.data_type = ov.Type.f32
        info.variable_id = name
        var = Variable(info)
        init = op.broadcast(op.constant(np.float32(0)), empty)
        past = op.read_value(init, var)
        past = op.gather(past, beam_idx, op.constant(0))
        present = op.concat([past, new], 2)
        sinks.append(op.assign(present, var))
        return present

    k_all = cached(k, "past_key_values.0.keypresent.0.key")
    v_all = cached(v, "past_key_values.0.valuepresent.0.value")
    # An attention mask input (none masked; causal does the masking): the
    # paged-attention conversion (openvino's StateManagementPattern) matches
    # attention with four inputs or more, as optimum-intel exports it.
    no_mask = op.constant(np.zeros((1, 1, 1, 1), dtype=np.float32))
    attn = op.scaled_dot_product_attention(q, k_all, v_all, no_mask, causal=True)
    x = op.add(x, op.squeeze(attn, op.constant([1])))
    logits = op.matmul(x, embed, False, True)
    logits.output(0).get_tensor().set_names({"logits"})
    result = op.result(logits)
    return ov.Model([result], sinks, [input_ids, attention_mask, position_ids, beam_idx], "npud-tiny")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "model")
    out.mkdir(parents=True, exist_ok=True)
    hf = make_tokenizer(out)
    from openvino_tokenizers import convert_tokenizer

    tokenizer, detokenizer = convert_tokenizer(hf, with_detokenizer=True)
    ov.save_model(tokenizer, out / "openvino_tokenizer.xml")
    ov.save_model(detokenizer, out / "openvino_detokenizer.xml")
    ov.save_model(make_model(len(hf)), out / "openvino_model.xml", compress_to_fp16=False)
    eos = hf.convert_tokens_to_ids("<|im_end|>")
    (out / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": HIDDEN,
        "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
        "vocab_size": len(hf), "max_position_embeddings": MAX_POSITIONS, "eos_token_id": eos,
    }, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}, indent=2) + "\n")


if __name__ == "__main__":
    main()
