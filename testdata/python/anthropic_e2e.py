"""Scenarios of the official Anthropic Python client against npud; each
prints one JSON object for the Go test that ran it (python_client_test.go)."""
import json
import sys

import anthropic
import pydantic

base_url, scenario = sys.argv[1], sys.argv[2]
client = anthropic.Anthropic(base_url=base_url, api_key="x", max_retries=0)

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def tool_loop():
    """A tool-use loop through the streaming helper: the model calls the
    tool (its input assembled from input_json_delta events), the result
    goes back, the model answers."""
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    called, stop_reasons, input_json = [], [], 0
    for _ in range(3):
        with client.messages.stream(model="sim", max_tokens=512, messages=messages, tools=[WEATHER]) as stream:
            for ev in stream:
                if ev.type == "input_json":
                    input_json += 1
            message = stream.get_final_message()
        stop_reasons.append(message.stop_reason)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if message.stop_reason != "tool_use":
            text = "".join(b.text for b in message.content if b.type == "text")
            return {"called": called, "stop_reasons": stop_reasons, "input_json_events": input_json, "text": text}
        results = []
        for b in message.content:
            if b.type == "tool_use":
                called.append(b.input)
                results.append({"type": "tool_result", "tool_use_id": b.id, "content": "sunny in " + b.input["city"]})
        messages.append({"role": "user", "content": results})
    return {"called": called, "stop_reasons": stop_reasons, "input_json_events": input_json, "text": None}


def whole():
    m = client.messages.create(model="sim", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    return {"type": m.type, "role": m.role, "stop_reason": m.stop_reason, "blocks": [b.type for b in m.content],
            "text": "".join(b.text for b in m.content if b.type == "text"), "usage": m.usage.model_dump()}


def thinking():
    """Thinking, streamed: thinking deltas, then text; the final message
    has both blocks."""
    thinking_events = text_events = 0
    with client.messages.stream(model="sim", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024},
                                messages=[{"role": "user", "content": "Why is the sky blue?"}]) as stream:
        for ev in stream:
            if ev.type == "thinking":
                thinking_events += 1
            elif ev.type == "text":
                text_events += 1
        message = stream.get_final_message()
    return {"thinking_events": thinking_events, "text_events": text_events,
            "blocks": [b.type for b in message.content], "usage": message.usage.model_dump()}


def count_tokens():
    """count_tokens, then the same request as a message: where npud counts
    the model's prompts the count is the message's input tokens, and the
    raw response says it is exact (its header and npud_estimate)."""
    params = dict(model="sim", system="be brief", tools=[WEATHER],
                  messages=[{"role": "user", "content": "What is the weather in Oslo?"},
                            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                                "input": {"city": "Oslo"}}]},
                            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}])
    raw = client.messages.with_raw_response.count_tokens(**params)
    r = raw.parse()
    message = client.messages.create(max_tokens=1, **params)
    return {"input_tokens": r.input_tokens, "npud_estimate": (r.model_extra or {}).get("npud_estimate"),
            "header": raw.headers.get("Npud-Token-Count"),
            "message_input_tokens": message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)}


def not_found():
    try:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        return {"error": None}
    except anthropic.NotFoundError as e:
        return {"error": type(e).__name__, "status": e.status_code, "type": e.body["error"]["type"],
                "message": e.body["error"]["message"]}


class City(pydantic.BaseModel):
    name: str
    population: int = pydantic.Field(ge=0)
    coastal: bool
    districts: list[str]


def structured():
    """messages.parse with a pydantic model (output_config.format), whole and
    through the stream helper: the answers parse into the model."""
    messages = [{"role": "user", "content": "Describe Oslo."}]
    whole = client.messages.parse(model="sim", max_tokens=256, messages=messages, output_format=City)
    with client.messages.stream(model="sim", max_tokens=256, messages=messages, output_format=City) as stream:
        final = stream.get_final_message()
    return {"whole": whole.parsed_output.model_dump(), "stop_reason": whole.stop_reason,
            "streamed": final.parsed_output.model_dump()}


SCENARIOS = {f.__name__: f for f in (tool_loop, whole, thinking, count_tokens, not_found, structured)}
print(json.dumps(SCENARIOS[scenario]()))
