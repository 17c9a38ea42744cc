"""Sends the same requests to pccx-serve ($PCCX_URL) from N clients at once
and prints, per request in a fixed order, its reply text and finish reason
(one JSON line each), then the server's /metrics figures and whether the
requests shared decode steps.

usage: parallel_clients.py N [greedy]

With `greedy`, every request is greedy (a drafted reply then equals the
plain one token for token; a sampled one only in distribution)."""
import json
import os
import sys
import threading
import urllib.request

url = os.environ["PCCX_URL"]
clients = int(sys.argv[1])
greedy = sys.argv[2:] == ["greedy"]


def post(path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read().decode())


# Greedy and seeded-sampled completions, chats, and a streamed one; prompts
# of different lengths and replies of different lengths, so requests join
# and leave while others generate.
requests = []
for i in range(8):
    body = {"prompt": "Story number %d begins with" % i + " once" * (i % 3),
            "max_tokens": 6 + 3 * (i % 4), "temperature": 0}
    if i % 2 and not greedy:
        body.update(temperature=0.8, top_p=0.9, seed=100 + i)
    requests.append(("/v1/completions", body))
for i in range(4):
    requests.append(("/v1/chat/completions",
                     {"messages": [{"role": "user", "content": "Hello %d" % i}],
                      "max_tokens": 8, "temperature": 0}))

results = [None] * len(requests)
lock = threading.Semaphore(clients)


def run(i):
    with lock:
        path, body = requests[i]
        r = post(path, body)
        choice = r["choices"][0]
        text = choice["text"] if "text" in choice else choice["message"]["content"]
        results[i] = {"text": text, "finish_reason": choice["finish_reason"],
                      "completion_tokens": r["usage"]["completion_tokens"]}


threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
for t in threads:
    t.start()
for t in threads:
    t.join()
for r in results:
    print(json.dumps(r, sort_keys=True))

metrics = {}
with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
    for line in response.read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.split()
            metrics[name] = float(value)
steps = metrics["pccx_decode_steps_total"]
tokens = metrics["pccx_generated_tokens_total"]
print("METRICS slots %d busy %d waiting %d tokens %d" % (
    metrics["pccx_slots"], metrics["pccx_slots_busy"],
    metrics["pccx_requests_waiting"], tokens))
# Each request's first token comes from its prompt, the rest from decode
# steps; shared steps serve several requests each.
print("shared steps:", steps < tokens - len(requests))
print("drafted", int(metrics["pccx_draft_tokens_total"]) > 0,
      "accepted", int(metrics["pccx_draft_accepted_tokens_total"]) > 0)
