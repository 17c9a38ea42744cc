"""Runs README.md's quick start from an installed prefix: every command of
the block under "## Quick start", in a directory holding demo-out/demo.pccx,
with PREFIX/bin first on PATH (the block's own `export PATH` line is what
this replaces). A server command is started, asked for /health and
stopped. Prints one line per command.

Usage: run_quick_start.py README.md PREFIX WORKDIR
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

readme, prefix, work = sys.argv[1:4]
text = open(readme, encoding="utf-8").read()
section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
block = [l[4:] for l in section.split("\n") if l.startswith("    ")]
env = dict(os.environ, PATH=os.path.join(prefix, "bin") + os.pathsep + os.environ["PATH"])
failed = False
for line in block:
    command = re.sub(r"\s+#.*$", "", line).strip()
    if not command or command.startswith("export "):
        continue
    if command.startswith("pccx-serve"):
        port = re.search(r"--port (\d+)", command).group(1)
        server = subprocess.Popen(command.replace("--port " + port, "--port 0"), shell=True,
                                  cwd=work, env=env, stdout=subprocess.PIPE, text=True,
                                  start_new_session=True)
        first = server.stdout.readline()
        found = re.search(r"http://([\d.]+):(\d+)", first)
        ok = False
        if found:
            for _ in range(50):
                try:
                    with urllib.request.urlopen("http://%s:%s/health" % found.groups(), timeout=5) as r:
                        ok = r.status == 200
                        break
                except OSError:
                    time.sleep(0.1)
        os.killpg(server.pid, 9)
        server.wait()
        print("%s: %s" % ("ok" if ok else "FAILED", command))
        failed |= not ok
        continue
    run = subprocess.run(command, shell=True, cwd=work, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300)
    print("%s: %s" % ("ok" if run.returncode == 0 else "FAILED (%d) %s" % (run.returncode, run.stderr.strip()[-200:]),
                      command))
    failed |= run.returncode != 0
sys.exit(1 if failed else 0)
