"""Sends a seeded sequence of requests to one pccx-serve, as a chat front end
does (next turns, regenerates, edits near the end, new conversations, some
requests at once), then sends each request alone to a fresh server started
with the same options, and checks that every reply is the fresh one: the
text, the finish reason and the token count.

usage: reuse_sequences.py BUNDLE --seed S --requests N [SERVER OPTIONS...]

The sequence starts with a fixed edit-and-regenerate pattern (a prompt, one
token more, the prompt again, a little less, ...). Then completions with
token-id prompts and chats (their conversations grow past
the context under --context-shift) are mixed; a quarter are sampled with a
seed, a few carry penalties. With --parallel above 1, requests go in groups
of up to that many at once. Prints one line per request and a summary; on a
difference, the request's index, both replies and the command that repeats
the sequence, and exits 1. Every wait is bounded.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

args = sys.argv[1:]
bundle, args = args[0], args[1:]
seed, count = 1, 20
server_options = []
while args:
    if args[0] == "--seed":
        seed, args = int(args[1]), args[2:]
    elif args[0] == "--requests":
        count, args = int(args[1]), args[2:]
    else:
        server_options.append(args[0])
        args = args[1:]
parallel = 1
if "--parallel" in server_options:
    parallel = int(server_options[server_options.index("--parallel") + 1])
deadline = time.monotonic() + 600


class Server:
    """pccx-serve on a free loopback port, stopped with SIGTERM."""

    def __init__(self):
        self.process = subprocess.Popen(
            ["pccx-serve", bundle, "--host", "127.0.0.1", "--port", "0",
             "--model-name", "tiny", "--quiet"] + server_options,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if not match:
            self.process.kill()
            sys.exit("FAIL: pccx-serve did not start: " + line +
                     self.process.stderr.read())
        self.url = match.group(1)

    def post(self, path, body):
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                reply = json.loads(response.read().decode())
        except urllib.error.HTTPError as e:
            return {"status": e.code, "error": json.loads(e.read().decode())}
        choice = reply["choices"][0]
        text = choice["text"] if "text" in choice else choice["message"]["content"]
        return {"text": text, "finish_reason": choice["finish_reason"],
                "completion_tokens": reply["usage"]["completion_tokens"]}

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            sys.exit("FAIL: the server did not stop within 30 s of SIGTERM")
        if status != 0:
            sys.exit("FAIL: the server exited with %d: %s" %
                     (status, self.process.stderr.read()))


rng = random.Random(seed)


def tokens(n):
    # Ids of the tiny tokenizer's ordinary pieces (above the special ones).
    return [rng.randrange(6, 60) for _ in range(n)]


def sampling(body):
    if rng.random() < 0.25:
        body.update(temperature=0.8, top_p=0.9, seed=rng.randrange(1000))
    else:
        body["temperature"] = 0
    if rng.random() < 0.15:
        body["presence_penalty"] = 0.5
    return body


# A few conversations of each kind: each request continues, regenerates or
# edits the latest one, or starts it anew.
completions = [None, None]
chats = [None, None]
words = ["the", "light", "of", "day", "and", "night", "came", "upon", "them"]


recent = {"completion": 0, "chat": 0}


def pick(kind, n):
    # Mostly the conversation worked on last, as one user edits it.
    if rng.random() < 0.2:
        recent[kind] = rng.randrange(n)
    return recent[kind]


def next_request(replies):
    if rng.random() < 0.6:
        c = pick("completion", len(completions))
        last = completions[c]
        how = rng.randrange(10) if last and len(last["full"]) < 90 else 0
        if how == 0:
            prompt = [2] + tokens(rng.randrange(1, 20))
        elif how <= 2:  # the next turn: prompt, reply, more
            prompt = last["full"] + tokens(rng.randrange(1, 8))
        elif how <= 4:  # a token or two more
            prompt = last["prompt"] + tokens(rng.randrange(1, 3))
        elif how <= 7:  # regenerate, or of a little less
            prompt = last["prompt"][:max(1, len(last["prompt"]) - rng.randrange(3))]
        else:  # edit one of the last tokens
            prompt = list(last["prompt"])
            prompt[-1 - rng.randrange(min(6, len(prompt)))] = rng.randrange(6, 60)
        body = sampling({"prompt": prompt, "max_tokens": rng.randrange(1, 6)})
        return "/v1/completions", body, ("completion", c, prompt)
    c = pick("chat", len(chats))
    last = chats[c]
    how = rng.randrange(10) if last else 0
    say = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 8)))
    if how == 0:
        messages = [{"role": "user", "content": say}]
        if rng.random() < 0.3:
            messages.insert(0, {"role": "system", "content": "Answer briefly."})
    elif how <= 5:  # the next turn
        messages = last["messages"] + [
            {"role": "assistant", "content": last["reply"]},
            {"role": "user", "content": say}]
    elif how <= 8:  # regenerate
        messages = last["messages"]
    else:  # edit the last user message
        messages = last["messages"][:-1] + [{"role": "user", "content": say}]
    body = sampling({"messages": messages, "max_tokens": rng.randrange(1, 9)})
    return "/v1/chat/completions", body, ("chat", c, messages)


def remember(kind, reply):
    what, c, prompt = kind
    if "text" not in reply:
        return
    if what == "completion":
        # The reply's ids are not returned; the next turn appends new ids to
        # the prompt instead (the reply's text re-tokenizes differently).
        completions[c] = {"prompt": prompt, "full": prompt + tokens(2)}
    else:
        chats[c] = {"messages": prompt, "reply": reply["text"]}


# First the edit-and-regenerate pattern that a chat front end sends most:
# a prompt, the prompt with a token more, the prompt again, a little less...
# (each step back is short; together they go further than the rings hold).
P = [2] + [6 + (i * 7) % 50 for i in range(16)]
prelude = [(P, 5), (P + [33], 2), (P, 5), (P[:-1], 3), (P + [40, 41], 1),
           (P[:-2], 4)]
requests, replies = [], []
server = Server()
for prompt, max_tokens in prelude:
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    requests.append(("/v1/completions", body))
    replies.append(server.post("/v1/completions", body))
count += len(prelude)
while len(requests) < count:
    group = [next_request(replies) for _ in range(
        min(count - len(requests), rng.randrange(1, parallel + 1)))]
    results = [None] * len(group)

    def run(i):
        results[i] = server.post(group[i][0], group[i][1])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(group))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1, deadline - time.monotonic()))
    for (path, body, kind), reply in zip(group, results):
        if reply is None:
            sys.exit("FAIL: no reply within the time limit")
        remember(kind, reply)
        requests.append((path, body))
        replies.append(reply)
server.stop()

reused = 0
for i, ((path, body), reply) in enumerate(zip(requests, replies)):
    if time.monotonic() > deadline:
        sys.exit("FAIL: the sequence took more than 600 s")
    fresh_server = Server()
    fresh = fresh_server.post(path, body)
    fresh_server.stop()
    print("%d %s %s" % (i, path, json.dumps(reply, sort_keys=True)))
    if reply != fresh:
        print("FAIL: request %d differs from a fresh server's reply" % i)
        print("  request:", json.dumps(body))
        print("  reused: ", json.dumps(reply, sort_keys=True))
        print("  fresh:  ", json.dumps(fresh, sort_keys=True))
        print("  repeat: reuse_sequences.py %s --seed %d --requests %d %s" %
              (bundle, seed, count - len(prelude), " ".join(server_options)))
        sys.exit(1)
print("%d requests, every reply equal to a fresh server's" % len(requests))
