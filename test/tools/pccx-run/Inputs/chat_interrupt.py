"""SIGINT in `pccx-run --chat`: during a reply it stops that reply and the
conversation goes on (the next turn reuses the KV cache); at the prompt, a
first SIGINT prints a hint and a second one ends the session with status 0.

usage: chat_interrupt.py BUNDLE
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

proc = subprocess.Popen(
    ["pccx-run", sys.argv[1], "--chat", "--json", "--max-new-tokens", "3900",
     "--stop-tokens", ""],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = bytearray(), bytearray()


def pump(stream, sink):
    for chunk in iter(lambda: os.read(stream.fileno(), 4096), b""):
        sink.extend(chunk)


for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
    threading.Thread(target=pump, args=(stream, sink), daemon=True).start()


# A ceiling, not a delay: generous enough for the sanitizer build on a
# loaded machine (make test-sanitize), where a reply is several times slower.
def wait_for(condition, what, seconds=120):
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            proc.kill()
            print("FAIL: timed out waiting for", what)
            print("stdout:", bytes(out)[-400:], "\nstderr:", bytes(err))
            sys.exit(1)
        time.sleep(0.005)


def turns():
    # Only complete lines: a long reply's line may still be arriving.
    lines = bytes(out).decode(errors="replace").split("\n")[:-1]
    return [json.loads(l) for l in lines if l]


def catches_sigint():
    """Whether the console's SIGINT handler is installed (before it, SIGINT
    would end the process: the bundle is still being opened)."""
    try:
        with open("/proc/%d/status" % proc.pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1
    except OSError:
        pass
    return False


def hints():
    return bytes(err).count(b"(Ctrl-C again or Ctrl-D to exit)")


def interrupt_reply(turn):
    """Sends SIGINT into the reply of `turn` (1-based) and waits for it. A
    SIGINT that lands before the console has read the line is taken at the
    prompt (a hint); the reply starts right after, so it is sent again."""
    seen = hints()
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    deadline = time.time() + 120
    while len(turns()) < turn:
        if hints() > seen:
            seen = hints()
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
        if time.time() > deadline:
            wait_for(lambda: False, "reply %d" % turn, 0)
        time.sleep(0.005)


wait_for(catches_sigint, "the chat console")
# This reply runs to 3900 tokens (seconds); SIGINT lands in the middle.
proc.stdin.write(b"Tell me a story\n")
proc.stdin.flush()
interrupt_reply(1)
first = turns()[0]
print("first reply ended by", first["ended_by"],
      "after fewer tokens:", len(first["reply_tokens"]) < 3900)

# The conversation goes on from the cached positions. This reply runs long
# too; it is interrupted the same way, which keeps the test fast.
proc.stdin.write(b"Hi\n")
proc.stdin.flush()
interrupt_reply(2)
second = turns()[1]
print("second turn reused the cache:",
      second["reused_tokens"] == first["prompt_tokens"] + len(first["reply_tokens"]) - 1)

# At the prompt: one SIGINT is a hint, the second one ends the session.
# The reply's last line can come out before the console is back at its
# prompt, and a SIGINT in between interrupts the reply that just ended; on a
# loaded machine that window is wide, so the SIGINT is sent again (every
# 2 s, for at most the usual ceiling) until the hint shows.
before = hints()
hinted = lambda: hints() > before
deadline = time.time() + 120
while not hinted() and time.time() < deadline:
    proc.send_signal(signal.SIGINT)
    until = time.time() + 2
    while not hinted() and time.time() < until:
        time.sleep(0.005)
wait_for(hinted, "the hint")
print("hint shown")
proc.send_signal(signal.SIGINT)
try:
    status = proc.wait(timeout=30)
except subprocess.TimeoutExpired:
    proc.kill()
    print("FAIL: still running after the second SIGINT")
    sys.exit(1)
print("exit status", status)
