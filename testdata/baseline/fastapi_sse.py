"""The FastAPI/uvicorn design the seed documents propose, as a comparison
point for docs/PERFORMANCE.md: an async generator per request that checks
for a disconnected client before each token, encodes each chunk with
json.dumps, and hands the generator to StreamingResponse. The "engine"
costs nothing: it yields max_tokens tokens, giving the loop a turn between
them as a real engine's await would.

    /usr/bin/python3 -m uvicorn fastapi_sse:app --app-dir testdata/baseline \
        --host 127.0.0.1 --port 18002 --log-level warning
"""
import asyncio
import json

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

app = FastAPI()


async def engine(max_tokens):
    for _ in range(max_tokens):
        await asyncio.sleep(0)
        yield " tok"


def chunk(delta, finish=None):
    return {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "sim",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def events(request, max_tokens):
    yield ("data: " + json.dumps(chunk({"role": "assistant", "content": ""})) + "\n\n").encode()
    async for token in engine(max_tokens):
        if await request.is_disconnected():
            return
        yield ("data: " + json.dumps(chunk({"content": token})) + "\n\n").encode()
    yield ("data: " + json.dumps(chunk({}, "length")) + "\n\n").encode()
    usage = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "sim", "choices": [],
             "usage": {"prompt_tokens": 1, "completion_tokens": max_tokens, "total_tokens": max_tokens}}
    yield ("data: " + json.dumps(usage) + "\n\n").encode()
    yield b"data: [DONE]\n\n"


@app.post("/v1/chat/completions")
async def chat(request: Request):
    body = await request.json()
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(request, int(body.get("max_tokens", 16))),
                             media_type="text/event-stream", headers=headers)
