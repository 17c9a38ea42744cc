"""llama.cpp server's routes and fields against a pccx-serve at $PCCX_URL
(see with_server.py). usage: llama_routes.py CASE...

  tokens  POST /tokenize and /detokenize: ids, pieces, BOS, a round trip,
          refusals
  props   GET /props' model, context, defaults, template, slots, build
  seed    two requests without a seed or sampling fields (the server's
          --seed and --temp apply): the same text
  n       n choices, complete and streamed, and the refusal past --max-n 2
  slots   GET /slots after a reply: no slot processing, one holding the
          prompt and reply
  busy    GET /slots while a long streamed reply generates: its slot is
          processing; once its client leaves, none is

Every call is bounded in time; each line printed is checked by the test.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

url = os.environ["PCCX_URL"]


def call(path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def error(status, body):
    e = body["error"]
    return "%d %s %s: %s" % (status, e["param"], e["code"], e["message"])


def tokens():
    status, plain = call("/tokenize", {"content": "Hello there"})
    ids = plain["tokens"]
    print("tokenize", status, "ids:", all(isinstance(i, int) for i in ids) and len(ids) > 0)
    _, bos = call("/tokenize", {"content": "Hello there", "add_special": True})
    print("add_special: BOS", bos["tokens"][0], "then the same ids:", bos["tokens"][1:] == ids)
    _, pieces = call("/tokenize", {"content": "Hello there", "with_pieces": True})
    print("pieces ids:", [p["id"] for p in pieces["tokens"]] == ids,
          "text:", repr("".join(p["piece"] for p in pieces["tokens"])))
    status, back = call("/detokenize", {"tokens": ids})
    print("detokenize", status, repr(back["content"]))
    print(error(*call("/detokenize", {"tokens": [5, 99999]})))
    print(error(*call("/detokenize", {"tokens": "5"})))
    print(error(*call("/tokenize", {"text": "Hi"})))


def props():
    status, p = call("/props")
    params = p["default_generation_settings"]["params"]
    print("props", status, "model", p["model_alias"], p["model_path"], "n_ctx",
          p["default_generation_settings"]["n_ctx"], "slots", p["total_slots"], "max_n", p["max_n"])
    print("params", json.dumps({k: params[k] for k in ("temperature", "top_k", "top_p", "min_p",
                                                       "repeat_penalty", "seed")}, sort_keys=True))
    print("template", p["chat_template_source"], repr(p["chat_template"][:40]))
    print("build", p["build_info"])


def seed():
    texts = [call("/v1/completions", {"prompt": "Hello", "max_tokens": 8})[1]["choices"][0]["text"]
             for _ in range(2)]
    print("same text without a seed in the request:", texts[0] == texts[1])


def n():
    status, r = call("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "n": 2, "temperature": 1,
                                         "seed": 3})
    print("complete", status, "indices", [c["index"] for c in r["choices"]],
          "completion_tokens", r["usage"]["completion_tokens"])
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "n": 2, "stream": True}
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    finished = []
    with urllib.request.urlopen(request, timeout=60) as stream:
        for line in stream:
            line = line.decode().strip()
            if line.startswith("data: {"):
                for c in json.loads(line[6:])["choices"]:
                    if c["finish_reason"]:
                        finished.append(c["index"])
    print("streamed choices finished:", finished)
    print(error(*call("/v1/completions", {"prompt": "Hello", "n": 3})))


def slots():
    _, r = call("/v1/completions", {"prompt": "Hello there", "max_tokens": 5, "temperature": 0})
    used = r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
    status, s = call("/slots")
    print("slots", status, len(s), "processing", [x["is_processing"] for x in s])
    # Every reply token but the last is in the cache (once the engine's
    # step that sampled the last one has ended).
    deadline = time.time() + 30
    while sorted(x["n_cached"] for x in s)[-1] != used - 1 and time.time() < deadline:
        time.sleep(0.05)
        s = call("/slots")[1]
    print("a slot holds the prompt and reply:", sorted(x["n_cached"] for x in s)[-1] == used - 1)
    print("fields", sorted(s[0]))


def busy():
    body = {"prompt": "Hello", "max_tokens": 4000, "temperature": 0, "stream": True}
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    stream = urllib.request.urlopen(request, timeout=60)
    stream.readline()  # the first event: the reply is generating
    s = call("/slots")[1]
    print("while generating:", sum(x["is_processing"] for x in s), "of", len(s), "processing")
    stream.close()  # the client leaves: the reply ends
    deadline = time.time() + 30
    while any(x["is_processing"] for x in call("/slots")[1]):
        if time.time() > deadline:
            sys.exit("FAIL: a slot still processing 30 s after its client left")
        time.sleep(0.05)
    print("after the client left: none processing")


for case in sys.argv[1:]:
    print("==", case)
    globals()[case]()
