#!/usr/bin/env python3
"""Aggregate throughput of pccx-serve --parallel, on loopback only.

usage: bench/serve-parallel.py --build DIR --work DIR [--clients N]
                               [--max-tokens T] [--requests R]

Uses the E2B-shaped checkpoint of bench/cpu-decode.sh (10 layers, made in
WORK when missing) with the tests' chat tokenizer (Gemma's turn markers;
the random weights write ids it does not spell, so replies count tokens,
not text), compiled with --decode-batch N. In one run it measures, with
greedy completions of T tokens (--max-tokens; max_tokens fixed, no stop
id, so every reply has T tokens):

  - one client, pccx-serve --parallel 1;
  - N clients at once, --parallel 1 (they take turns);
  - N clients at once, --parallel N (continuous batching);

and prints the aggregate tokens/s of each and its ratio to one client.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

args = argparse.ArgumentParser()
args.add_argument("--build", required=True)
args.add_argument("--work", required=True)
args.add_argument("--clients", type=int, default=4)
args.add_argument("--max-tokens", type=int, default=16)
args.add_argument("--requests", type=int, default=2, help="per client")
opts = args.parse_args()
bin_dir = os.path.join(opts.build, "bin")
os.makedirs(opts.work, exist_ok=True)
ckpt = os.path.join(opts.work, "e2b-10")
if not os.path.exists(os.path.join(ckpt, "config.json")):
    subprocess.run([os.path.join(HERE, "cpu-decode.sh"), opts.build, opts.work, "10",
                    "--tokens", "1", "--threads", "1", "--memcpy-mib", "1"],
                   check=True, stdout=subprocess.DEVNULL)
spm = os.path.join(opts.work, "chat-tokenizer")
if not os.path.exists(spm + ".model"):
    subprocess.run(["spm_train", "--input=" + os.path.join(ROOT, "test/tools/pccx-run/Inputs/chat-corpus.txt"),
                    "--model_prefix=" + spm, "--vocab_size=512", "--model_type=bpe",
                    "--character_coverage=1.0", "--pad_id=0", "--eos_id=1", "--bos_id=2",
                    "--unk_id=3", "--hard_vocab_limit=false",
                    "--user_defined_symbols=<start_of_turn>,<end_of_turn>", "--minloglevel=2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
bundle = os.path.join(opts.work, "e2b-10-chat-batch%d.pccx" % opts.clients)
if not os.path.exists(bundle):
    print("compiling", bundle, "...", file=sys.stderr)
    subprocess.run([os.path.join(bin_dir, "pccx-compile"), ckpt, "--max-seq-len", "512",
                    "--decode-batch", str(opts.clients), "--tokenizer", spm + ".model",
                    "--quiet", "-o", bundle], check=True)


def serve(parallel):
    server = subprocess.Popen(
        [os.path.join(bin_dir, "pccx-serve"), bundle, "--host", "127.0.0.1", "--port", "0",
         "--quiet", "--parallel", str(parallel), "--max-tokens-limit", str(opts.max_tokens),
         "--threads", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    url = line.split("listening on ")[1].split()[0]
    return server, url


def post(url, body):
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read().decode())


def load(url, clients):
    tokens = [0] * clients

    def client(c):
        for r in range(opts.requests):
            # Distinct prompts: no prefix is reused across clients.
            body = {"prompt": [2] + [100 + 37 * c + r] * 8, "max_tokens": opts.max_tokens,
                    "temperature": 0, "stop": []}
            tokens[c] += post(url, body)["usage"]["completion_tokens"]

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(tokens) / (time.monotonic() - start)


rows = []
server, url = serve(1)
try:
    post(url, {"prompt": [2, 5], "max_tokens": 2})  # warm-up
    rows.append(("1 client, --parallel 1", load(url, 1)))
    rows.append(("%d clients, --parallel 1" % opts.clients, load(url, opts.clients)))
finally:
    server.terminate()
    server.wait(timeout=60)
server, url = serve(opts.clients)
try:
    post(url, {"prompt": [2, 5], "max_tokens": 2})
    rows.append(("%d clients, --parallel %d" % (opts.clients, opts.clients), load(url, opts.clients)))
finally:
    server.terminate()
    server.wait(timeout=60)
print("serve-parallel: %s, %d requests per client of %d tokens each" %
      (bundle, opts.requests, opts.max_tokens))
print("| clients, server | aggregate tok/s | vs one client |")
print("|---|---:|---:|")
for name, rate in rows:
    print("| %s | %.2f | %.2fx |" % (name, rate, rate / rows[0][1]))
