"""A tool killed while it writes leaves no half-written file behind.

Starts pccx-make-checkpoint on the E2B preset in 64 MiB shards (gigabytes:
it is still writing when the signal comes). It fills a temp directory
beside OUT_DIR (OUT_DIR.tmp.PID.N, renamed to OUT_DIR once complete); once
that holds a finished shard, the signal named on the command line is sent.
Checks that the tool ended by that signal, that no temp directory or file
is left beside OUT_DIR, and that OUT_DIR, if there, holds no shard.
Usage: interrupt.py TOOL OUT_DIR SIGNAL
"""
import os
import signal
import subprocess
import sys
import time

tool, out, signame = sys.argv[1], sys.argv[2], sys.argv[3]
sig = getattr(signal, signame)


def default_dispositions():
    # A test runner started in the background may ignore SIGINT, and an
    # ignored signal stays ignored across exec (and in the tool, by design).
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


parent = os.path.dirname(os.path.abspath(out))
temp_prefix = os.path.basename(os.path.abspath(out)) + ".tmp."


def listing(path):
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


def temp_dirs():
    return [os.path.join(parent, n) for n in listing(parent)
            if n.startswith(temp_prefix)]


proc = subprocess.Popen([tool, "--preset", "e2b", "--shard-size", "64M", "-o", out],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        preexec_fn=default_dispositions)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if any(n.endswith(".safetensors") for d in temp_dirs() for n in listing(d)):
        break
    if proc.poll() is not None:
        print("FAIL: the tool ended before writing (status %d)" % proc.returncode)
        sys.exit(1)
    time.sleep(0.01)
else:
    proc.kill()
    print("FAIL: no finished shard within 60 s")
    sys.exit(1)
proc.send_signal(sig)
status = proc.wait(timeout=60)
left = temp_dirs()
shards = [n for n in os.listdir(out) if n.endswith(".safetensors")] \
    if os.path.isdir(out) else []
print("status %d (%s), temp files left %d, shards %d" %
      (status, "-" + signame if status == -sig else "other", len(left), len(shards)))
sys.exit(0 if status == -sig and not left and not shards else 1)
