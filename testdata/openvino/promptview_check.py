"""Checks npud's prompt view against the official OpenVINO GenAI (npu/openvino/promptview.go).

    python promptview_check.py MODEL_DIR VIEW_DIR
    python promptview_check.py --prefill VIEW_DIR < texts.json

For each conversation, GenAI templates the messages itself on MODEL_DIR (generate with a
ChatHistory), and the same conversation, rendered to text by GenAI's own apply_chat_template,
is given as a plain string to a pipeline reading VIEW_DIR (the model through npud's prompt
view). Prints one JSON object per conversation: both greedy answers, both prefilled token
counts (perf metrics' num_input_tokens), and the rendered text's token count through
Tokenizer.encode(add_special_tokens=False).

With --prefill it reads a JSON list of prompt texts and prints, as a JSON list, how many tokens
the pipeline reading VIEW_DIR prefilled for each (perf metrics' num_input_tokens of a one-token
generation).
"""
import json
import sys

import openvino_genai as ov_genai

CONVERSATIONS = [
    [{"role": "user", "content": "Say hello"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello"},
     {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Again, in Norwegian: Hei på deg"}],
]


def prefill(view: str) -> None:
    texts = json.load(sys.stdin)
    cfg = ov_genai.GenerationConfig()
    cfg.max_new_tokens = 1
    cfg.do_sample = False
    pipe = ov_genai.LLMPipeline(view, "CPU")
    counts = [pipe.generate([text], cfg).perf_metrics.get_num_input_tokens() for text in texts]
    json.dump(counts, sys.stdout)


def main() -> None:
    if sys.argv[1] == "--prefill":
        prefill(sys.argv[2])
        return
    model, view = sys.argv[1], sys.argv[2]
    cfg = ov_genai.GenerationConfig()
    cfg.max_new_tokens = 12
    cfg.do_sample = False
    own = ov_genai.LLMPipeline(model, "CPU")
    viewed = ov_genai.LLMPipeline(view, "CPU")
    tokenizer = ov_genai.Tokenizer(model)
    view_template = ov_genai.Tokenizer(view).chat_template
    for messages in CONVERSATIONS:
        a = own.generate(ov_genai.ChatHistory(messages), cfg)
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        b = viewed.generate([text], cfg)  # a list: DecodedResults, with perf metrics
        print(json.dumps({
            "view_template": view_template,
            "own_answer": a.texts[0], "view_answer": b.texts[0],
            "own_prefilled": a.perf_metrics.get_num_input_tokens(),
            "view_prefilled": b.perf_metrics.get_num_input_tokens(),
            "encoded": len(tokenizer.encode(text, add_special_tokens=False).input_ids.data[0]),
        }, ensure_ascii=False))


if __name__ == "__main__":
    main()
