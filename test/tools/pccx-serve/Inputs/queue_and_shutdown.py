"""The arrival-order queue and the graceful stop of pccx-serve ($PCCX_URL,
$PCCX_SERVER_PID; started with --max-queue 1): while one long reply streams,
a second request waits, a third is refused with 503 queue_full, /health
answers at once; SIGTERM then ends the streamed reply (finish_reason
"length", [DONE]) and the waiting request gets 503 shutting_down."""
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request

url = os.environ["PCCX_URL"]


def post(body):
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        return urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as e:
        return e


def health():
    with urllib.request.urlopen(url + "/health", timeout=10) as r:
        return json.loads(r.read())


def wait_for(condition, what):
    deadline = time.time() + 30
    while not condition():
        if time.time() > deadline:
            raise SystemExit("FAIL: timed out waiting for " + what)
        time.sleep(0.005)


# This greedy reply runs to 3900 tokens (seconds on the simulator, over KV
# records of 4096 slots), far longer than the rest of the script takes.
events = []
first_event = threading.Event()


def long_stream():
    response = post({"prompt": [2, 82, 83], "max_tokens": 3900, "temperature": 0, "stream": True})
    for line in response:
        if line.startswith(b"data: "):
            events.append(line[6:].decode().strip())
            first_event.set()


waiting = {}


def queued():
    response = post({"prompt": "Hi", "max_tokens": 4})
    waiting["status"], waiting["body"] = response.status if hasattr(response, "status") else response.code, json.loads(response.read())


a = threading.Thread(target=long_stream)
a.start()
if not first_event.wait(30):
    raise SystemExit("FAIL: the long reply did not start")
b = threading.Thread(target=queued)
b.start()
wait_for(lambda: health()["requests_in_queue"] == 2, "the second request to queue")
print("health while busy:", health()["status"], "requests_in_queue", health()["requests_in_queue"])

refused = post({"prompt": "Hi", "max_tokens": 4})
print("third request:", refused.code, json.loads(refused.read())["error"]["code"])

os.kill(int(os.environ["PCCX_SERVER_PID"]), signal.SIGTERM)
a.join(30)
b.join(30)
chunks = [json.loads(e) for e in events[:-1]]
print("streamed reply cut:", chunks[-1]["choices"][0]["finish_reason"],
      "after fewer tokens:", len(chunks) - 1 < 3900, "last event:", events[-1])
print("waiting request:", waiting["status"], waiting["body"]["error"]["code"])
