"""Truncates a bundle under a running pccx-run; prints its stderr and exit code.

usage: truncate_while_running.py BUNDLE
pccx-run generates thousands of tokens; a moment after it starts the bundle
is cut to 4 KiB, so the next page the process touches is gone (SIGBUS
without a handler)."""
import os
import subprocess
import sys
import time

bundle = sys.argv[1]
p = subprocess.Popen(["pccx-run", bundle, "--tokens", "1,2", "--max-new-tokens", "8000",
                      "--stop-tokens", ""],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
time.sleep(0.3)
if p.poll() is not None:
    sys.exit("pccx-run ended before the bundle was truncated")
os.truncate(bundle, 4096)
err = p.stderr.read().decode()
print(err.strip())
print("exit", p.wait())
