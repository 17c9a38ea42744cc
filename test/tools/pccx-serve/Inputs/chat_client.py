"""POST /v1/chat/completions to the server under with_server.py ($PCCX_URL),
for the tests' Python cases: the complete response, or a streamed one put
together as OpenAI's clients do (content appended; tool calls by index,
their arguments appended) into the same shape."""
import json
import os
import urllib.error
import urllib.request

URL = os.environ["PCCX_URL"]


def post(body, stream=False):
    """(status, response JSON); an HTTP error gives its status and body."""
    body = dict(body, stream=stream)
    request = urllib.request.Request(URL + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            data = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())
    if not stream:
        return status, json.loads(data)
    message = {"role": None, "content": None}
    finish = None
    for line in data.splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:])["choices"]:
            delta = choice["delta"]
            message["role"] = delta.get("role", message["role"])
            if "content" in delta:
                message["content"] = (message["content"] or "") + delta["content"]
            for call in delta.get("tool_calls", []):
                calls = message.setdefault("tool_calls", [])
                while len(calls) <= call["index"]:
                    calls.append({"id": None, "type": "function",
                                  "function": {"name": "", "arguments": ""}})
                merged = calls[call["index"]]
                merged["id"] = call.get("id", merged["id"])
                merged["function"]["name"] += call.get("function", {}).get("name", "")
                merged["function"]["arguments"] += call.get("function", {}).get("arguments", "")
            finish = choice["finish_reason"] or finish
    return status, {"choices": [{"message": message, "finish_reason": finish}]}
