"""pccx-serve's tool calling, one line per check.

usage (under with_server.py, $PCCX_URL set): tool_cases.py

For tool_choice "required", "auto" and a named function, greedy and
seeded: a reply that ends is a call of a declared function (the named one
when named) whose arguments parse and validate under its parameters
(json_subset.py), or (auto only) text; its streamed deltas, put together
as OpenAI's clients do, equal the complete reply. Then n = 2, a
conversation that carries calls and results, and the refusals.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "pccx-run", "Inputs"))
from chat_client import post  # noqa: E402
from json_subset import validates  # noqa: E402

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 8},
                          "unit": {"enum": ["C", "F"]}},
           "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather",
                                           "description": "The weather in a city.",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time",
                                           "parameters": {"type": "object", "properties": {},
                                                          "additionalProperties": False}}}]
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def request(choice, seed=None, **extra):
    body = {"messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
            "tools": TOOLS, "tool_choice": choice, "max_tokens": 160,
            "temperature": 0 if seed is None else 1}
    if seed is not None:
        body["seed"] = seed
    body.update(extra)
    return body


def check_calls(message, named=None):
    assert message["content"] is None, message
    for call in message["tool_calls"]:
        assert call["type"] == "function" and call["id"].startswith("call_"), call
        name = call["function"]["name"]
        assert name in PARAMETERS and (named is None or name == named), call
        assert validates(json.loads(call["function"]["arguments"]), PARAMETERS[name]), call
    return len(message["tool_calls"])


NAMED = {"type": "function", "function": {"name": "get_weather"}}
for label, choice, named in [("required", "required", None), ("auto", "auto", None),
                             ("named", NAMED, "get_weather")]:
    ended = calls = texts = 0
    for seed in [None, 1, 2]:
        body = request(choice, seed)
        status, reply = post(body)
        assert status == 200, reply
        result = reply["choices"][0]
        _, streamed = post(body, stream=True)
        assert streamed["choices"][0]["finish_reason"] == result["finish_reason"], (result, streamed)
        assert streamed["choices"][0]["message"]["role"] == "assistant"
        # The same calls (each request's ids are its own).
        def functions(message):
            return [c["function"] for c in message.get("tool_calls") or []]
        assert streamed["choices"][0]["message"]["content"] == result["message"]["content"], \
            (result, streamed)
        assert functions(streamed["choices"][0]["message"]) == functions(result["message"]), \
            (result, streamed)
        if result["finish_reason"] == "tool_calls":
            calls += check_calls(result["message"], named)
        elif result["finish_reason"] == "stop":
            assert label == "auto" and isinstance(result["message"]["content"], str), result
            texts += 1
        else:
            assert result["finish_reason"] == "length", result
            continue
        ended += 1
    print("%s: %d of 3 ended (%d calls, %d texts), all valid, streamed the same"
          % (label, ended, calls, texts))

# n = 2: each choice its own reply, call ids distinct.
status, reply = post(request("required", 5, n=2))
ids = [c["id"] for choice in reply["choices"] if choice["finish_reason"] == "tool_calls"
       for c in choice["message"]["tool_calls"]]
print("n=2:", status, len(reply["choices"]), "choices, ids distinct", len(ids) == len(set(ids)))

# A conversation that carries a call and its result, and a text reply
# with tool_choice none.
history = [{"role": "user", "content": "What is the weather in Oslo?"},
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
           {"role": "tool", "tool_call_id": "call_1", "content": "12 C, rain"}]
status, reply = post({"messages": history, "tools": TOOLS, "max_tokens": 120, "temperature": 0})
print("after a result:", status, reply["choices"][0]["finish_reason"] in ["stop", "tool_calls", "length"],
      reply["usage"]["prompt_tokens"] > 60)
status, reply = post({"messages": history, "tools": TOOLS, "tool_choice": "none",
                      "max_tokens": 8, "temperature": 0})
print("none:", status, "tool_calls" not in reply["choices"][0]["message"])

# Refusals: status, param, and the message.
for label, extra in [
        ("pattern", {"tools": [{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {
                "a": {"type": "string", "pattern": "x"}}}}}]}),
        ("unknown name", {"tools": TOOLS, "tool_choice": {"type": "function",
                                                         "function": {"name": "fly"}}}),
        ("with response_format", {"tools": TOOLS, "response_format": {"type": "json_object"}}),
        ("bad arguments", {"tools": TOOLS, "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                "name": "get_time", "arguments": "{not json"}}]}]}),
]:
    body = {"messages": [{"role": "user", "content": "x"}]}
    body.update(extra)
    status, reply = post(body)
    error = reply["error"]
    print("refused %s: %d %s %s" % (label, status, error["param"], error["message"]))
