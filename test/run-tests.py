#!/usr/bin/env python3
"""Runs every lit suite given (FileCheck tests and GoogleTest executables) in
one lit invocation and ends with a single summary line:
    tests: N passed, M failed
Exit status is non-zero if any test failed or lit itself failed."""
import argparse
import re
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--lit", required=True, help="path to lit.py")
parser.add_argument("suites", nargs="+")
args = parser.parse_args()

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
