"""Scenarios of the official Ollama Python client against npud; each prints
one JSON object for the Go test that ran it (ollamaapi/python_client_test.go)."""
import json
import sys

import ollama
import pydantic

base_url, scenario = sys.argv[1], sys.argv[2]
client = ollama.Client(host=base_url)


class City(pydantic.BaseModel):
    name: str
    population: int = pydantic.Field(ge=0)
    coastal: bool
    districts: list[str]


def structured():
    """format=Model.model_json_schema(), as the package's docs show it, on
    chat (whole and streamed) and generate; format="json" for JSON mode."""
    messages = [{"role": "user", "content": "Describe Oslo."}]
    whole = client.chat(model="sim", messages=messages, format=City.model_json_schema())
    streamed = ""
    for part in client.chat(model="sim", messages=messages, format=City.model_json_schema(), stream=True):
        streamed += part.message.content
    generated = client.generate(model="sim", prompt="Describe Oslo.", format=City.model_json_schema())
    json_mode = client.chat(model="sim", messages=messages, format="json")
    return {"whole": City.model_validate_json(whole.message.content).model_dump(), "done_reason": whole.done_reason,
            "streamed": City.model_validate_json(streamed).model_dump(),
            "generated": City.model_validate_json(generated.response).model_dump(),
            "json_mode": json.loads(json_mode.message.content)}


class Airport(pydantic.BaseModel):
    code: str = pydantic.Field(pattern="^[A-Z]{3}$")


def unsupported_schema():
    """A schema keyword npud cannot hold an answer to (pattern, from a
    pydantic Field) is a 400 the client raises."""
    try:
        client.chat(model="sim", messages=[{"role": "user", "content": "hi"}], format=Airport.model_json_schema())
        return {"error": None}
    except ollama.ResponseError as e:
        return {"error": e.error, "status": e.status_code}


SCENARIOS = {f.__name__: f for f in (structured, unsupported_schema)}
print(json.dumps(SCENARIOS[scenario]()))
