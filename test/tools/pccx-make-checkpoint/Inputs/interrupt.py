"""A tool killed while it writes leaves no half-written file behind.

Starts pccx-make-checkpoint on the E2B preset (gigabytes: it is still writing
when the signal comes), waits until its first temp file exists, sends the
signal named on the command line and checks that the tool ended by that
signal and that the output directory holds neither a temp file nor a shard.
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


proc = subprocess.Popen([tool, "--preset", "e2b", "-o", out],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        preexec_fn=default_dispositions)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if os.path.isdir(out) and any(".tmp." in n for n in os.listdir(out)):
        break
    if proc.poll() is not None:
        print("FAIL: the tool ended before writing (status %d)" % proc.returncode)
        sys.exit(1)
    time.sleep(0.01)
else:
    proc.kill()
    print("FAIL: no temp file within 60 s")
    sys.exit(1)
proc.send_signal(sig)
status = proc.wait(timeout=60)
left = sorted(os.listdir(out))
shards = [n for n in left if n.endswith(".safetensors")]
temps = [n for n in left if ".tmp." in n]
print("status %d (%s), temp files left %d, shards %d" %
      (status, "-" + signame if status == -sig else "other", len(temps), len(shards)))
sys.exit(0 if status == -sig and not temps and not shards else 1)
