"""pccx-serve's structured output (response_format), one line per check.

usage (under with_server.py, $PCCX_URL set): structured_cases.py [--vocabulary-refusal]

Every reply that ends ("stop") parses and validates under its schema
(json_subset.py, written from the subset's rules), streamed replies equal
complete ones, a reply cut by max_tokens ends with "length", and schemas
beyond the subset are refused naming the keyword.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "pccx-run", "Inputs"))
from chat_client import post  # noqa: E402
from json_subset import SCHEMAS, validates  # noqa: E402


def request(schema, seed=None, **extra):
    body = {"messages": [{"role": "user", "content": "Answer in JSON."}],
            "max_tokens": 160, "temperature": 0 if seed is None else 1}
    if seed is not None:
        body["seed"] = seed
    if schema is None:
        body["response_format"] = {"type": "json_object"}
    else:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    body.update(extra)
    return body


if sys.argv[1:] == ["--vocabulary-refusal"]:
    status, reply = post({"messages": [{"role": "user", "content": "x"}],
                          "response_format": {"type": "json_object"}})
    print("refused:", status, reply["error"]["param"], reply["error"]["code"],
          reply["error"]["message"])
    sys.exit(0)

for name, schema in list(SCHEMAS.items()) + [("any object", None)]:
    ended = 0
    for seed in [None, 1, 2]:
        body = request(schema, seed)
        status, reply = post(body)
        assert status == 200, reply
        choice = reply["choices"][0]
        text = choice["message"]["content"]
        _, streamed = post(body, stream=True)
        assert streamed["choices"][0]["message"]["content"] == text, (text, streamed)
        assert streamed["choices"][0]["finish_reason"] == choice["finish_reason"]
        if choice["finish_reason"] != "stop":
            assert choice["finish_reason"] == "length", choice
            continue
        value = json.loads(text)
        assert (isinstance(value, dict) if schema is None else validates(value, schema)), text
        ended += 1
    print("%s: %d of 3 ended, all valid, streamed the same" % (name, ended))

# llama.cpp's form: json_object with a schema.
status, reply = post({"messages": [{"role": "user", "content": "x"}], "max_tokens": 60,
                      "temperature": 0,
                      "response_format": {"type": "json_object", "schema": SCHEMAS["scalar"]}})
value = json.loads(reply["choices"][0]["message"]["content"])
print("json_object with a schema:", status, validates(value, SCHEMAS["scalar"]))

# Cut by max_tokens: "length", and the text is a prefix of a document.
status, reply = post(request(SCHEMAS["person"], max_tokens=3))
print("cut:", status, reply["choices"][0]["finish_reason"],
      reply["choices"][0]["message"]["content"].lstrip()[:1])

# Plain text is still plain text.
status, reply = post({"messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
                      "response_format": {"type": "text"}})
print("text:", status)

# Refusals: status, param, and the message's start.
for label, fmt in [
        ("pattern", {"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}}}),
        ("$ref", {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#"}}}),
        ("oneOf", {"type": "json_schema", "json_schema": {"name": "x", "schema": {"oneOf": [{}]}}}),
        ("no schema", {"type": "json_schema", "json_schema": {"name": "x"}}),
        ("unknown type", {"type": "xml"}),
        ("not an object", "json"),
        ("deep", {"type": "json_schema", "json_schema": {"name": "x", "schema": json.loads(
            "{\"items\":" * 40 + "{}" + "}" * 40)}}),
]:
    status, reply = post({"messages": [{"role": "user", "content": "x"}], "response_format": fmt})
    error = reply["error"]
    print("refused %s: %d %s %s ... %s" % (label, status, error["param"], error["message"][:90],
                                         error["message"][-40:]))
