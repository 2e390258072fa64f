"""Scenarios of the official OpenAI Python client against npud; each prints
one JSON object for the Go test that ran it (python_client_test.go)."""
import json
import sys
from typing import Literal, Optional

import openai
import pydantic

base_url, scenario = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url + "/v1", api_key="x", max_retries=0)

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}


def responses_whole():
    r = client.responses.create(model="sim", input="hi")
    return {"id": r.id, "status": r.status, "text": r.output_text,
            "types": [it.type for it in r.output], "usage": r.usage.model_dump()}


def responses_stream():
    types, sequence, deltas = [], [], ""
    final = None
    with client.responses.stream(model="sim", input="hi") as stream:
        for ev in stream:
            types.append(ev.type)
            sequence.append(ev.sequence_number)
            if ev.type == "response.output_text.delta":
                deltas += ev.delta
        final = stream.get_final_response()
    return {"types": types, "sequence": sequence, "deltas": deltas, "text": final.output_text, "status": final.status}


def responses_tool_loop():
    first = client.responses.create(model="sim", input="What is the weather in Oslo?", tools=[WEATHER])
    call = next(it for it in first.output if it.type == "function_call")
    second = client.responses.create(
        model="sim", previous_response_id=first.id, tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    return {"call": {"name": call.name, "call_id": call.call_id, "arguments": json.loads(call.arguments)},
            "answer": second.output_text, "status": second.status,
            "first_input": first.usage.input_tokens, "second_input": second.usage.input_tokens}


def responses_continue():
    first = client.responses.create(model="sim", input="hi")
    second = client.responses.create(model="sim", input="and then?", previous_response_id=first.id)
    got = client.responses.retrieve(second.id)
    items = client.responses.input_items.list(second.id)
    client.responses.delete(first.id)
    try:
        client.responses.create(model="sim", input="again", previous_response_id=first.id)
        gone = None
    except openai.NotFoundError as e:
        gone = {"status": e.status_code, "code": e.code, "param": e.param}
    return {"first_input": first.usage.input_tokens, "first_output": first.usage.output_tokens,
            "second_input": second.usage.input_tokens, "retrieved": got.output_text == second.output_text,
            "input_items": [it.type for it in items.data], "after_delete": gone}


def chat():
    whole = client.chat.completions.create(model="sim", messages=[{"role": "user", "content": "hi"}], max_tokens=5)
    text, finish = "", None
    stream = client.chat.completions.create(model="sim", messages=[{"role": "user", "content": "hi"}],
                                            stream=True, stream_options={"include_usage": True})
    usage = None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage.completion_tokens
    models = [m.id for m in client.models.list()]
    return {"whole": whole.choices[0].message.content, "whole_finish": whole.choices[0].finish_reason,
            "whole_tokens": whole.usage.completion_tokens, "streamed": text, "finish": finish,
            "stream_tokens": usage, "models": models}


def not_found():
    try:
        client.responses.create(model="gpt-5-codex", input="hi")
        return {"error": None}
    except openai.NotFoundError as e:
        return {"error": type(e).__name__, "status": e.status_code, "code": e.code, "message": e.message}


class Address(pydantic.BaseModel):
    city: str
    country: str


class Person(pydantic.BaseModel):
    """The shapes pydantic gives a schema: $defs/$ref for a nested model,
    anyOf with null for an optional field, enum, bounds, arrays."""
    name: str
    age: int = pydantic.Field(ge=0, le=150)
    role: Literal["admin", "user"]
    tags: list[str]
    address: Address
    nickname: Optional[str]


def structured_chat():
    """chat.completions.parse (whole) and the stream helper with a pydantic
    model: the answers parse into the model."""
    messages = [{"role": "user", "content": "Who is Ada?"}]
    whole = client.chat.completions.parse(model="sim", messages=messages, response_format=Person, seed=1)
    with client.chat.completions.stream(model="sim", messages=messages, response_format=Person, seed=2) as stream:
        final = stream.get_final_completion()
    return {"whole": whole.choices[0].message.parsed.model_dump(), "whole_finish": whole.choices[0].finish_reason,
            "streamed": final.choices[0].message.parsed.model_dump()}


def structured_responses():
    """responses.parse with a pydantic model: the output parses into it."""
    r = client.responses.parse(model="sim", input="Who is Ada?", text_format=Person)
    return {"parsed": r.output_parsed.model_dump(), "status": r.status, "format": r.text.format.type}


def choices():
    """n choices, whole and streamed, as the client assembles them."""
    messages = [{"role": "user", "content": "hi"}]
    whole = client.chat.completions.create(model="sim", messages=messages, n=3, seed=4, max_tokens=5)
    streamed = {}
    finishes = {}
    for chunk in client.chat.completions.create(model="sim", messages=messages, n=3, seed=4, max_tokens=5, stream=True):
        for c in chunk.choices:
            streamed[c.index] = streamed.get(c.index, "") + (c.delta.content or "")
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    return {"whole": [c.message.content for c in sorted(whole.choices, key=lambda c: c.index)],
            "indices": [c.index for c in whole.choices], "completion_tokens": whole.usage.completion_tokens,
            "streamed": [streamed[i] for i in sorted(streamed)], "finishes": [finishes[i] for i in sorted(finishes)]}


def legacy_functions():
    """The legacy functions: the call comes back as function_call, and its
    result goes back as a function message."""
    functions = [{"name": "get_weather", "parameters": WEATHER["parameters"]}]
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    first = client.chat.completions.create(model="sim", messages=messages, functions=functions,
                                           function_call={"name": "get_weather"})
    msg = first.choices[0].message
    call = {"name": msg.function_call.name, "arguments": json.loads(msg.function_call.arguments)}
    messages += [{"role": "assistant", "content": None, "function_call": msg.function_call.model_dump()},
                 {"role": "function", "name": "get_weather", "content": "sunny"}]
    second = client.chat.completions.create(model="sim", messages=messages, functions=functions)
    return {"call": call, "finish": first.choices[0].finish_reason, "tool_calls": msg.tool_calls,
            "answer": second.choices[0].message.content}


def logprobs():
    try:
        client.chat.completions.create(model="sim", messages=[{"role": "user", "content": "hi"}], logprobs=True)
        return {"error": None}
    except openai.BadRequestError as e:
        return {"error": type(e).__name__, "status": e.status_code, "param": e.param, "message": e.message}


def langchain_structured():
    """LangChain's default with_structured_output (ChatOpenAI: the json_schema
    method, through response_format), whole, with a pydantic model."""
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model="sim", base_url=base_url + "/v1", api_key="x", max_retries=0)
    person = llm.with_structured_output(Person).invoke("Who is Ada?")
    return {"parsed": person.model_dump(), "type": type(person).__name__}


SCENARIOS = {f.__name__: f for f in (langchain_structured, responses_whole, responses_stream, responses_tool_loop, responses_continue, chat, not_found,
                                     structured_chat, structured_responses, choices, legacy_functions, logprobs)}
print(json.dumps(SCENARIOS[scenario]()))
