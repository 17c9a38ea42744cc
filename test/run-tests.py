#!/usr/bin/env python3
"""Runs every lit suite given (FileCheck tests and GoogleTest executables) in
one lit invocation and ends with a single summary line:
    tests: N passed, M failed
Suites named in the environment variable PCCX_EXTRA_SUITES (separated by
spaces; make test: the aarch64 build's) join the same run.
Exit status is non-zero if any test failed or lit itself failed."""
import argparse
import os
import re
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--lit", required=True, help="path to lit.py")
parser.add_argument("suites", nargs="+")
args = parser.parse_args()
extra = os.environ.get("PCCX_EXTRA_SUITES", "").split()
for suite in extra:
    if not os.path.exists(os.path.join(suite, "lit.site.cfg.py")):
        print(f"error: PCCX_EXTRA_SUITES names {suite}, which has no lit.site.cfg.py", file=sys.stderr)
        print("tests: 0 passed, 1 failed")
        sys.exit(1)
args.suites += extra

cmd = [sys.executable, args.lit, "-sv", *args.suites]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
counts = {}
for line in proc.stdout:
    sys.stdout.write(line)
    sys.stdout.flush()
    m = re.match(r"^\s+(Passed|Failed|Unsupported|Expectedly Failed|Unexpectedly Passed|Unresolved|Timed Out|Excluded|Skipped)\s*:\s*(\d+)", line)
    if m:
        counts[m.group(1)] = int(m.group(2))
rc = proc.wait()
passed = counts.get("Passed", 0) + counts.get("Expectedly Failed", 0)
failed = sum(counts.get(k, 0) for k in ("Failed", "Unexpectedly Passed", "Unresolved", "Timed Out"))
skipped = counts.get("Unsupported", 0) + counts.get("Skipped", 0)
if rc != 0 and failed == 0:
    failed = 1  # lit failed without a test result (configuration error)
if passed == 0 and failed == 0:
    print("error: no test ran", file=sys.stderr)
    failed = 1
print(f"tests: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
