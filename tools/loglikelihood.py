#!/usr/bin/env python3
"""Scores multiple-choice items through pccx-serve the way
lm-evaluation-harness' local-completions model scores loglikelihoods, and
prints each item's choice and the accuracy.

usage: loglikelihood.py URL ITEMS.jsonl [--model NAME] [--api-key KEY]

ITEMS.jsonl holds one {"context", "choices": [...], "answer": index} per
line; each choice continues the context (starting with its space). For each
item, one request in the harness' shape:

    POST URL/v1/completions
    {"model", "prompt": [context + choice, ...], "temperature": 0,
     "max_tokens": 1, "logprobs": 1, "seed": 1234, "echo": true}

and the harness' reading of each choice (sorted by index): the sum of
token_logprobs[ctxlen:-1] (the -1 drops the one generated token), and
whether each of those values is its top_logprobs maximum (is_greedy).
ctxlen counts the tokens whose text starts before the context's end
(text_offset), as the harness counts the context's own tokens. The answer
is the choice of the highest sum (the harness' "acc").
"""
import json
import sys
import urllib.request


def main(argv):
    args = argv[1:]
    model, key = None, None
    while len(args) > 2:
        if args[-2] == "--model":
            model, args = args[-1], args[:-2]
        elif args[-2] == "--api-key":
            key, args = args[-1], args[:-2]
        else:
            break
    if len(args) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    url, path = args[0].rstrip("/"), args[1]
    items = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    correct = 0
    for n, item in enumerate(items):
        payload = {"prompt": [item["context"] + c for c in item["choices"]],
                   "temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234,
                   "echo": True}
        if model:
            payload["model"] = model
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = "Bearer " + key
        request = urllib.request.Request(url + "/v1/completions",
                                         json.dumps(payload).encode(), headers)
        with urllib.request.urlopen(request, timeout=600) as response:
            choices = sorted(json.load(response)["choices"], key=lambda c: c["index"])
        scores = []
        for choice in choices:
            lp = choice["logprobs"]
            ctxlen = sum(1 for offset in lp["text_offset"] if offset < len(item["context"]))
            values = lp["token_logprobs"][ctxlen:-1]
            tops = lp["top_logprobs"][ctxlen:-1]
            greedy = all(v == max(t.values()) for v, t in zip(values, tops))
            scores.append((sum(values), greedy, len(values)))
        best = max(range(len(scores)), key=lambda i: scores[i][0])
        correct += best == item["answer"]
        print("%d. %s ..." % (n + 1, item["context"][-40:]))
        for i, (total, greedy, tokens) in enumerate(scores):
            print("   %s %-36s loglikelihood %8.3f over %d tokens%s" % (
                "*" if i == best else " ", repr(item["choices"][i])[:36], total, tokens,
                ", greedy" if greedy else ""))
    print("accuracy: %d of %d (%.0f %%; chance %.0f %%)" % (
        correct, len(items), 100.0 * correct / len(items),
        100.0 * sum(1.0 / len(i["choices"]) for i in items) / len(items)))


if __name__ == "__main__":
    main(sys.argv)
