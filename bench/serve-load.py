#!/usr/bin/env python3
"""pccx-serve under load and hostile clients, on loopback only.

usage: bench/serve-load.py [--build DIR] [--bundle FILE.pccx] [--timeout S]

Without --bundle it builds the tiny chat checkpoint of the tests and
compiles it with a 4096-token context (so that a reply of 2000 tokens keeps
the simulator busy). It then starts pccx-serve on 127.0.0.1 with
--max-queue 7 and reports:

  1. /health latency while 8 generation requests hold every slot (one
     generating, seven waiting);
  2. how 16 more generation requests are answered while the queue is full
     (each should be a 503 at once);
  3. the server's resident memory before and after 1000 hostile requests
     (invalid UTF-8 paths, oversized chunked and unframed bodies,
     conflicting Content-Length, bad JSON, prompts too long for the
     context, slow clients, pipelined and truncated requests);
  4. the time SIGTERM takes to end it with a reply generating.

Everything is bounded: the request counts are fixed, every socket has a
timeout, and the whole run stops after --timeout seconds (default 300).
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

parser = argparse.ArgumentParser()
parser.add_argument("--build", default=os.path.join(ROOT, "build"))
parser.add_argument("--bundle")
parser.add_argument("--timeout", type=float, default=300)
args = parser.parse_args()
bin_dir = os.path.join(args.build, "bin")
deadline = time.monotonic() + args.timeout


def left():
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        sys.exit("serve-load: out of time (--timeout %g s)" % args.timeout)
    return remaining


work = tempfile.mkdtemp(prefix="pccx-serve-load-")
bundle = args.bundle
if not bundle:
    ckpt = os.path.join(work, "chat")
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    subprocess.run(["sh", os.path.join(ROOT, "test/tools/pccx-run/Inputs/make_chat_checkpoint.sh"), ckpt],
                   check=True, env=env, timeout=left())
    bundle = os.path.join(work, "chat.pccx")
    subprocess.run([os.path.join(bin_dir, "pccx-compile"), ckpt, "--max-seq-len", "4096", "-o", bundle],
                   check=True, timeout=left())

log = open(os.path.join(work, "server.log"), "w")
server = subprocess.Popen([os.path.join(bin_dir, "pccx-serve"), bundle, "--host", "127.0.0.1", "--port", "0",
                           "--max-queue", "7", "--max-tokens", "4000", "--max-body-bytes", "65536",
                           "--request-timeout", "3", "--quiet"],
                          stdout=subprocess.PIPE, stderr=log, text=True)
line = server.stdout.readline()
match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
if not match:
    server.kill()
    sys.exit("serve-load: the server did not start: " + line)
port = int(match.group(1))


def rss_kib():
    with open("/proc/%d/status" % server.pid) as f:
        for entry in f:
            if entry.startswith("VmRSS:"):
                return int(entry.split()[1])
    return -1


def request(method, path, body=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=min(timeout, left()))
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as e:
        return None, str(e).encode()
    finally:
        conn.close()


def generation(max_tokens):
    # Greedy from these ids, the tiny model runs to max_tokens without
    # meeting an end of turn (as in the tests' queue script).
    return json.dumps({"prompt": [2, 82, 83], "max_tokens": max_tokens, "temperature": 0})


def queued():
    status, body = request("GET", "/health", timeout=5)
    return json.loads(body)["requests_in_queue"] if status == 200 else -1


# 1. Every slot busy: 8 long generations (1 generating, 7 waiting).
busy_results = []
busy = [threading.Thread(target=lambda: busy_results.append(
    request("POST", "/v1/completions", generation(3900), timeout=left())[0])) for _ in range(8)]
for t in busy:
    t.start()
while queued() < 8 and left() > 0:
    time.sleep(0.05)
latencies = []
for _ in range(20):
    t0 = time.monotonic()
    status, _ = request("GET", "/health", timeout=5)
    latencies.append((time.monotonic() - t0) * 1000 if status == 200 else float("inf"))
    time.sleep(0.05)
print("health under 8 busy slots: %d requests, median %.1f ms, max %.1f ms, queue %d"
      % (len(latencies), statistics.median(latencies), max(latencies), queued()))

# 2. A full queue answers 503 at once.
extra = []
extra_threads = [threading.Thread(target=lambda: extra.append(
    (lambda t0: (request("POST", "/v1/completions", generation(4), timeout=10)[0],
                 time.monotonic() - t0))(time.monotonic()))) for _ in range(16)]
for t in extra_threads:
    t.start()
for t in extra_threads:
    t.join(timeout=left())
refused = sum(1 for status, _ in extra if status == 503)
print("full queue: %d of %d extra requests got 503, slowest answer %.1f ms"
      % (refused, len(extra), max(s for _, s in extra) * 1000))

# 3. Memory after 1000 hostile requests (the busy generations go on).
before = rss_kib()


def raw(data, read=True, timeout=5):
    with socket.create_connection(("127.0.0.1", port), timeout=min(timeout, left())) as s:
        try:
            s.sendall(data)
            if read:
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
        except OSError:
            pass


long_prompt = json.dumps({"prompt": "word " * 12000, "max_tokens": 1}).encode()
hostile = [
    b"GET /%FF%FE%0Apccx-serve:%20forged HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"4000\r\n" + b"x" * 0x4000 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n",
    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n" + b" " * 200000,
    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{\"messa\xff",
    b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(long_prompt) + long_prompt,
    b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP",
    b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\n\r\n",
    b"\x00\xff garbage \r\n\r\n",
]
slow = []
rss_at = {}
for i in range(1000):
    if i in (250, 500, 750):
        rss_at[i] = rss_kib()
    if i % 100 == 99:  # a slow client: part of a request, then silence
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        slow.append(s)
        continue
    raw(hostile[i % len(hostile)])
health = request("GET", "/health", timeout=5)[0]
time.sleep(4)  # past --request-timeout: the slow clients are dropped
for s in slow:
    s.close()
after = rss_kib()
print("memory: RSS %.1f MiB before, %s, %.1f MiB after 1000 hostile requests (/health %s meanwhile)"
      % (before / 1024, ", ".join("%.1f after %d" % (rss_at[i] / 1024, i) for i in sorted(rss_at)),
         after / 1024, health))

# 4. SIGTERM with a reply generating and requests waiting.
t0 = time.monotonic()
server.send_signal(signal.SIGTERM)
try:
    status = server.wait(timeout=min(30, left()))
    print("SIGTERM: exit %d after %.2f s" % (status, time.monotonic() - t0))
except subprocess.TimeoutExpired:
    server.kill()
    print("SIGTERM: the server did not stop within 30 s")
for t in busy:
    t.join(timeout=min(10, left()))
print("busy requests answered: %s" % sorted(busy_results, key=str))
