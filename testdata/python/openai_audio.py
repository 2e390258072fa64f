"""The official OpenAI Python client transcribes a file through npud in
every response format, translates it and streams it; prints one JSON
object for the Go test that ran it (python_audio_test.go in openaiapi,
openvino_audio_test.go in daemon)."""
import json
import sys

import openai

base_url, model, path = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base_url + "/v1", api_key="x", max_retries=0)


def transcribe(**kw):
    with open(path, "rb") as f:
        return client.audio.transcriptions.create(model=model, file=f, **kw)


out = {}
out["json"] = transcribe(response_format="json").text
verbose = transcribe(response_format="verbose_json", timestamp_granularities=["segment"])
out["verbose"] = {"duration": verbose.duration, "language": verbose.language, "text": verbose.text,
                  "segments": [{"start": s.start, "end": s.end, "text": s.text} for s in verbose.segments or []]}
# text, srt and vtt come back as the body itself.
for fmt in ("text", "srt", "vtt"):
    out[fmt] = transcribe(response_format=fmt)
with open(path, "rb") as f:
    out["translation"] = client.audio.translations.create(model=model, file=f).text
events, deltas = [], ""
with open(path, "rb") as f:
    for ev in client.audio.transcriptions.create(model=model, file=f, stream=True):
        events.append(ev.type)
        if ev.type == "transcript.text.delta":
            deltas += ev.delta
        elif ev.type == "transcript.text.done":
            out["stream_text"] = ev.text
out["events"], out["deltas"] = events, deltas
try:
    with open(path, "rb") as f:
        client.audio.transcriptions.create(model=model, file=f, response_format="diarized_json")
    out["refused"] = None
except openai.BadRequestError as e:
    out["refused"] = {"status": e.status_code, "param": e.body.get("param"), "code": e.body.get("code")}
print(json.dumps(out))
