"""Stop strings against pccx-serve ($PCCX_URL): the reply ends before the
first occurrence, without it, with finish_reason "stop", and a streamed
reply never shows any of it."""
import json
import os
import urllib.request

url = os.environ["PCCX_URL"]


def post(path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


base = {"prompt": "Tell me a story", "max_tokens": 40, "temperature": 0}
full = json.loads(post("/v1/completions", base))["choices"][0]["text"]
# A stop string from the middle of the unconstrained reply.
middle = len(full) // 2
stop = full[middle:middle + 3]
first = full.find(stop)
cut = json.loads(post("/v1/completions", dict(base, stop=[stop])))["choices"][0]
print("stopped:", cut["finish_reason"], "text is the prefix before it:", cut["text"] == full[:first])

streamed = post("/v1/completions", dict(base, stop=stop, stream=True))
events = [line[6:] for line in streamed.split("\n") if line.startswith("data: ")]
text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
finish = json.loads(events[-2])["choices"][0]["finish_reason"]
print("streamed:", finish, "same text:", text == cut["text"], "last event:", events[-1])
