#!/usr/bin/env python3
"""What one request may cost pccx-serve: the per-request budgets, side by side.

usage: bench/serve-budgets.py [--build DIR] [--timeout S]

Compiles the demo model (tools/demo-model) with a 1100-token context, starts
pccx-serve on 127.0.0.1 with --max-tokens-limit 1000 and measures, in one run:

  1. memory: the server's resident set before and after a completions body
     listing 3000 one-token prompts (refused by --max-prompts, default 32),
     and after the same list served under --max-prompts 3000 by a second
     server (max_tokens 0: each choice copies its own prompt only);
  2. a 4-token request's latency alone, and while a scoring batch (32
     prompts of ~120 tokens, echo, logprobs 20, max_tokens 0, served under
     raised --max-scored-tokens) holds the slot: the batch's prompts each
     wait for a turn of their own;
  3. the server's CPU seconds for one streamed reply of up to 1000 tokens
     with logprobs, and for the same reply without (ratio printed).

Every request has a timeout and the run stops after --timeout seconds
(default 600). Loopback only.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

parser = argparse.ArgumentParser()
parser.add_argument("--build", default=os.path.join(ROOT, "build"))
parser.add_argument("--timeout", type=float, default=600)
args = parser.parse_args()
tools = os.path.join(args.build, "bin")
stop_at = time.monotonic() + args.timeout


def remaining():
    left = stop_at - time.monotonic()
    if left <= 0:
        sys.exit("serve-budgets: out of time (--timeout %g s)" % args.timeout)
    return left


class Served:
    """One pccx-serve process on a free loopback port."""

    def __init__(self, bundle, *options):
        self.proc = subprocess.Popen(
            [os.path.join(tools, "pccx-serve"), bundle, "--port", "0", "--quiet",
             "--max-tokens-limit", "1000", *options],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        found = re.search(r"127\.0\.0\.1:(\d+)", self.proc.stdout.readline())
        if not found:
            self.proc.kill()
            sys.exit("serve-budgets: pccx-serve did not start")
        self.port = int(found.group(1))

    def post(self, body, timeout=120):
        """(status, body bytes, seconds)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=min(timeout, remaining()))
        t0 = time.monotonic()
        try:
            conn.request("POST", "/v1/completions", json.dumps(body),
                         {"Content-Type": "application/json"})
            reply = conn.getresponse()
            return reply.status, reply.read(), time.monotonic() - t0
        finally:
            conn.close()

    def rss_mib(self):
        with open("/proc/%d/status" % self.proc.pid) as status:
            for entry in status:
                if entry.startswith("VmRSS:"):
                    return int(entry.split()[1]) / 1024
        return -1.0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


work = tempfile.mkdtemp(prefix="pccx-serve-budgets-")
bundle = os.path.join(work, "demo.pccx")
subprocess.run([os.path.join(tools, "pccx-compile"), os.path.join(ROOT, "tools/demo-model"),
                "--max-seq-len", "1100", "-o", bundle], check=True, timeout=remaining())
with open("/proc/loadavg") as f:
    print("load average at the start: %s" % " ".join(f.read().split()[:3]))

# 1. Memory of a long prompt list.
many = {"prompt": ["And"] * 3000, "max_tokens": 0}
server = Served(bundle)
before = server.rss_mib()
status, _, seconds = server.post(many)
print("3000 prompts, default --max-prompts: status %d in %.1f ms, RSS %.1f -> %.1f MiB"
      % (status, seconds * 1000, before, server.rss_mib()))
server.close()
server = Served(bundle, "--max-prompts", "3000", "--max-request-tokens", "100000",
                "--max-scored-tokens", "100000")
before = server.rss_mib()
status, _, seconds = server.post(many, timeout=300)
print("3000 prompts, --max-prompts 3000: status %d in %.2f s, RSS %.1f -> %.1f MiB"
      % (status, seconds, before, server.rss_mib()))
server.close()

# 2. A short request behind a scoring batch.
with open(os.path.join(ROOT, "tools/demo-model/heldout.txt")) as f:
    words = f.read().split()
batch = {"prompt": [" ".join(words[i * 90:(i + 1) * 90]) for i in range(32)],
         "max_tokens": 0, "echo": True, "logprobs": 20}
short = {"prompt": "And God said", "max_tokens": 4, "temperature": 0}
# Budgets raised so that the batch (~3 800 scored tokens) is served.
server = Served(bundle, "--max-scored-tokens", "8192", "--max-request-tokens", "8192")
alone = min(server.post(short)[2] for _ in range(3))
done = {}
scoring = threading.Thread(target=lambda: done.setdefault("batch", server.post(batch, timeout=600)))
scoring.start()
time.sleep(0.5)
status, _, behind = server.post(short, timeout=600)
scoring.join(timeout=remaining())
batch_status, _, batch_seconds = done["batch"]
print("4-token request: %.3f s alone, %.3f s behind a 32-prompt scoring batch (batch: status %d, %.1f s)"
      % (alone, behind, batch_status, batch_seconds))

# 3. CPU of a streamed reply with and without logprobs.
def streamed_cpu(logprobs):
    body = {"prompt": "And", "max_tokens": 1000, "stream": True, "temperature": 1.0, "seed": 7}
    if logprobs:
        body["logprobs"] = 5
    t0 = server.cpu_seconds()
    status, text, _ = server.post(body, timeout=600)
    tokens = text.count(b'"text_offset"') if logprobs else text.count(b"data: {") - 1
    return server.cpu_seconds() - t0, status, tokens


plain_cpu, _, plain_chunks = streamed_cpu(False)
scored_cpu, status, scored_chunks = streamed_cpu(True)
print("streamed reply: %.2f s of server CPU without logprobs (%d chunks), %.2f s with (%d chunks), ratio %.2f"
      % (plain_cpu, plain_chunks, scored_cpu, scored_chunks, scored_cpu / max(plain_cpu, 1e-9)))
server.close()
with open("/proc/loadavg") as f:
    print("load average at the end: %s" % " ".join(f.read().split()[:3]))
