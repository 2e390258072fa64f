"""The structured-output property check by hand, against a running npud (docs/PERFORMANCE.md):
every schema of structured_schemas.json × seeds 0..N-1 as an OpenAI response_format, temperature 1.
Prints how many answers parsed, how many ended in structured_output_failed, and anything else.

    python3 structured_property.py http://127.0.0.1:11434 MODEL 50
"""
import json
import pathlib
import sys
import time
import urllib.error
import urllib.request


def main() -> None:
    url, model, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    here = pathlib.Path(__file__).resolve().parent
    schemas = json.loads((here / "structured_schemas.json").read_text(encoding="utf-8"))["schemas"]
    valid = failed = other = 0
    start = time.time()
    for i, schema in enumerate(schemas):
        for seed in range(seeds):
            body = {"model": model, "max_tokens": 300, "seed": seed, "temperature": 1.0,
                    "messages": [{"role": "user", "content": "Answer."}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "s%d" % i, "schema": schema}}}
            req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req) as r:
                    json.loads(json.load(r)["choices"][0]["message"]["content"])
                valid += 1
            except urllib.error.HTTPError as e:
                if "structured_output_failed" in e.read().decode():
                    failed += 1
                else:
                    other += 1
    print(json.dumps({"answers": len(schemas) * seeds, "valid": valid, "structured_output_failed": failed,
                      "other": other, "seconds": round(time.time() - start, 1)}))


if __name__ == "__main__":
    main()
