"""Runs COMMAND; when it fails, prints its output to stderr and runs it once
more, so that one failure under a loaded machine shows its cause without
failing the suite, while a page that does not work fails both times.

usage: retry_once.py OUTPUT_FILE -- COMMAND...
"""
import subprocess
import sys

out_path = sys.argv[1]
command = sys.argv[sys.argv.index("--") + 1:]
for attempt in (1, 2):
    with open(out_path, "w") as out:
        status = subprocess.call(command, stdout=out)
    if status == 0:
        sys.exit(0)
    with open(out_path) as out:
        sys.stderr.write("retry_once.py: attempt %d exited with %d; its output:\n%s\n"
                         % (attempt, status, out.read()))
sys.exit(status)
