"""Checks pccx-serve's log-probabilities against pccx-run's logits.

usage (under with_server.py, $PCCX_URL set): logprobs_cases.py BUNDLE

Every value the server gives must be the log-softmax of the logits row
`pccx-run BUNDLE --tokens ... --dump-logits` writes for the same position
(row i predicts token i + 1). Prints one line per check.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import numpy as np

BUNDLE = sys.argv[1]
URL = os.environ["PCCX_URL"]
TOLERANCE = 1e-5


def post(route, body):
    request = urllib.request.Request(URL + route, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def post_json(route, body):
    status, text = post(route, body)
    assert status == 200, (status, text)
    return json.loads(text)


def stream(route, body):
    """The chunks of a streamed response, [DONE] left out."""
    status, text = post(route, dict(body, stream=True))
    assert status == 200, (status, text)
    events = [line[len("data: "):] for line in text.split("\n")
              if line.startswith("data: ")]
    assert events[-1] == "[DONE]", events[-1]
    return [json.loads(e) for e in events[:-1]]


def log_softmax_rows(ids):
    """log-softmax of each row pccx-run computes for `ids`."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.bin")
        subprocess.run(["pccx-run", BUNDLE, "--tokens",
                        ",".join(map(str, ids)), "--max-new-tokens", "0",
                        "--dump-logits", dump], check=True,
                       capture_output=True)
        rows = np.fromfile(dump, dtype="<f4").astype(np.float64)
    rows = rows.reshape(len(ids), -1)
    top = rows.max(axis=1, keepdims=True)
    return rows - top - np.log(np.exp(rows - top).sum(axis=1, keepdims=True))


def greedy(ids, count):
    """pccx-run's greedy continuation of `ids`."""
    out = subprocess.run(["pccx-run", BUNDLE, "--tokens",
                          ",".join(map(str, ids)), "--max-new-tokens",
                          str(count)], check=True, capture_output=True,
                         text=True).stdout
    return [int(t) for t in out.strip().split(",")]


def top_values(row, n):
    return sorted(row, reverse=True)[:n]


# An echoed prompt scored alone (max_tokens 0): every prompt token but the
# first against the row before it; each top_logprobs map holds the 5 most
# likely values and the token's own.
ids = [2, 10, 11, 12, 40, 41, 99, 7, 200, 31]
ls = log_softmax_rows(ids)
out = post_json("/v1/completions", {"prompt": ids, "max_tokens": 0,
                                    "echo": True, "logprobs": 5,
                                    "temperature": 0})
choice = out["choices"][0]
lp = choice["logprobs"]
errors = [abs(lp["token_logprobs"][i] - ls[i - 1][ids[i]])
          for i in range(1, len(ids))]
for i in range(1, len(ids)):
    want = top_values(ls[i - 1], 5) + [ls[i - 1][ids[i]]]
    got = sorted(lp["top_logprobs"][i].values(), reverse=True)
    errors += [min(abs(g - w) for w in want) for g in got]
    errors.append(abs(got[0] - want[0]))
print("echo: tokens", len(lp["tokens"]) == len(ids),
      "first null", lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None,
      "finish", choice["finish_reason"], "completion_tokens",
      out["usage"]["completion_tokens"],
      "match", max(errors) < TOLERANCE)

# echo without logprobs: the prompt's text, then the reply's.
plain = post_json("/v1/completions", {"prompt": ids, "max_tokens": 3,
                                      "temperature": 0})["choices"][0]
echoed = post_json("/v1/completions", {"prompt": ids, "max_tokens": 3,
                                       "echo": True, "temperature": 0})["choices"][0]
print("echo text: logprobs", echoed["logprobs"],
      "ends with the reply", echoed["text"].endswith(plain["text"]),
      "prompt first", echoed["text"][:-len(plain["text"]) or None] == choice["text"])

# lm-evaluation-harness' loglikelihood: the request of its local-completions
# model for a batch of (context, continuation) pairs, and its parse of the
# answer (choices sorted by index; sum(token_logprobs[ctxlen:-1]); greedy
# when each value is its top_logprobs maximum).
pairs = [([2, 10, 11, 12], [40, 41]),
         ([2, 50, 60], greedy([2, 50, 60], 3)),
         ([2, 7, 8, 9, 10, 11], [300])]
for max_tokens in (1, 0):
    payload = {"model": "tiny",
               "prompt": [ctx + cont for ctx, cont in pairs],
               "temperature": 0, "max_tokens": max_tokens, "logprobs": 1,
               "seed": 1234, "echo": True}
    response = post_json("/v1/completions", payload)
    end = -1 if max_tokens == 1 else None
    for (ctx, cont), c in zip(pairs, sorted(response["choices"],
                                            key=lambda c: c["index"])):
        ctxlen = len(ctx)
        values = c["logprobs"]["token_logprobs"][ctxlen:end]
        tops = c["logprobs"]["top_logprobs"][ctxlen:end]
        logprob = sum(values)
        is_greedy = all(v == max(t.values()) for v, t in zip(values, tops))
        full = ctx + cont
        rows = log_softmax_rows(full)
        want = sum(rows[j - 1][full[j]] for j in range(ctxlen, len(full)))
        want_greedy = all(int(np.argmax(rows[j - 1])) == full[j]
                          for j in range(ctxlen, len(full)))
        print("loglikelihood max_tokens", max_tokens, "index", c["index"],
              "tokens", len(values) == len(cont),
              "match", abs(logprob - want) < TOLERANCE,
              "greedy", is_greedy, is_greedy == want_greedy)

# A chat's generated tokens, greedy: against the rows of the prompt and
# reply that pccx-run --chat produces for the same message.
turn = json.loads(subprocess.run(
    ["pccx-run", BUNDLE, "--chat", "--json", "--max-new-tokens", "8"],
    input="hi there\n", check=True, capture_output=True, text=True
).stdout.splitlines()[0])
prompt, reply = turn["fed_tokens"], turn["reply_tokens"]
rows = log_softmax_rows(prompt + reply[:-1])
chat = {"messages": [{"role": "user", "content": "hi there"}],
        "max_tokens": 8, "temperature": 0, "logprobs": True,
        "top_logprobs": 3}
out = post_json("/v1/chat/completions", chat)
content = out["choices"][0]["logprobs"]["content"]
errors = []
for i, entry in enumerate(content):
    row = rows[len(prompt) - 1 + i]
    errors.append(abs(entry["logprob"] - row[reply[i]]))
    errors += [abs(t["logprob"] - w) for t, w in
               zip(entry["top_logprobs"], top_values(row, 3))]
    errors.append(abs(entry["top_logprobs"][0]["logprob"] - entry["logprob"]))
    assert entry["bytes"] == list(entry["token"].encode()), entry
print("chat: text", out["choices"][0]["message"]["content"] == turn["reply_text"],
      "entries", len(content) == out["usage"]["completion_tokens"]
      - (out["choices"][0]["finish_reason"] == "stop"),
      "refusal", out["choices"][0]["logprobs"]["refusal"],
      "match", max(errors) < TOLERANCE)

# Streamed: the chunks' entries, concatenated, are the complete response's;
# greedy, seeded sampling and a stop string that holds text back.
for name, extra in (("greedy", {}),
                    ("seeded", {"temperature": 0.9, "seed": 7}),
                    ("stop", {"temperature": 0.9, "seed": 7,
                              "stop": [out["choices"][0]["message"]["content"][3:5] or "x"]})):
    body = dict(chat, max_tokens=12, **extra)
    whole = post_json("/v1/chat/completions", body)["choices"][0]
    chunks = stream("/v1/chat/completions", body)
    entries, text, carried = [], "", True
    for chunk in chunks:
        choice = chunk["choices"][0]
        if choice["logprobs"] is not None:
            entries += choice["logprobs"]["content"]
        if choice["delta"].get("content"):
            carried = carried and choice["logprobs"] is not None
            text += choice["delta"]["content"]
    print("stream", name, "text", text == whole["message"]["content"],
          "every text chunk has logprobs", carried,
          "entries", entries == whole["logprobs"]["content"])

# Completions, streamed with logprobs: the legacy shape per chunk.
chunks = stream("/v1/completions", {"prompt": ids, "max_tokens": 4,
                                    "temperature": 0, "logprobs": 2})
tokens = sum((c["choices"][0]["logprobs"]["tokens"] for c in chunks
              if c["choices"][0]["logprobs"]), [])
whole = post_json("/v1/completions", {"prompt": ids, "max_tokens": 4,
                                      "temperature": 0, "logprobs": 2})
print("stream completions: tokens",
      tokens == whole["choices"][0]["logprobs"]["tokens"])

# Several prompts: one choice each, in order, as each alone gets it.
prompts = ["Hello", [2, 10, 11], "the end"]
many = post_json("/v1/completions", {"prompt": prompts, "max_tokens": 4,
                                     "temperature": 0})
alone = [post_json("/v1/completions", {"prompt": p, "max_tokens": 4,
                                       "temperature": 0})["choices"][0]["text"]
         for p in prompts]
print("prompts: indexes", [c["index"] for c in many["choices"]],
      "texts", [c["text"] for c in many["choices"]] == alone,
      "usage", many["usage"]["completion_tokens"])

# An echoed text prompt is returned as sent, and its offsets index that
# text: runs of spaces the tokenizer's normalizer collapses, and a
# compatibility ligature it folds, come before later words.
sent = "In  the   beginning   God   created  the heaven and\tthe earth \ufb01ne"
echo = post_json("/v1/completions", {"prompt": sent, "max_tokens": 0, "echo": True,
                                     "logprobs": 1})["choices"][0]
offsets = echo["logprobs"]["text_offset"]
tokens = echo["logprobs"]["tokens"]
folded = sent.index("\ufb01")
words = [(o, t.strip()) for o, t in zip(offsets[1:], tokens[1:])
         if t.strip().isalpha() and t.strip().isascii() and o + len(t) <= folded]
print("echo offsets: text as sent", echo["text"] == sent,
      "in order", all(a <= b for a, b in zip(offsets, offsets[1:])),
      "within", all(0 <= o <= len(sent) for o in offsets),
      "words at their offsets", len(words) > 5 and
      all(sent[o:].lstrip().startswith(w) for o, w in words))

# Refusals name the field.
for route, body in (
        ("/v1/chat/completions", dict(chat, top_logprobs=21)),
        ("/v1/chat/completions", {"messages": chat["messages"], "top_logprobs": 2}),
        ("/v1/completions", {"prompt": "x", "logprobs": 21}),
        ("/v1/completions", {"prompt": ["a", "b"], "stream": True}),
        ("/v1/completions", {"prompt": "x", "echo": True, "stream": True}),
        ("/v1/chat/completions", dict(chat, max_tokens=0))):
    status, text = post(route, body)
    error = json.loads(text)["error"]
    print("refused", status, error["param"], error["code"])
