"""Runs a command against a pccx-serve started on a free loopback port.

usage: with_server.py [--timeout S] [--print-log] BUNDLE [SERVER OPTIONS...] -- COMMAND...

Starts `pccx-serve BUNDLE --host 127.0.0.1 --port 0 OPTIONS`, waits for
its "listening on" line, runs COMMAND through the shell with $PCCX_URL set
to the server's base URL (http://127.0.0.1:PORT) and $PCCX_SERVER_PID, then stops the server
with SIGTERM and checks that it exits with status 0. Everything is bounded
in time. Prints the command's output, then "server: exit 0".
"""
import os
import re
import signal
import subprocess
import sys

args = sys.argv[1:]
timeout, print_log = 60, False
while args[0].startswith("--"):
    if args[0] == "--timeout":
        timeout, args = float(args[1]), args[2:]
    elif args[0] == "--print-log":  # the server's stderr after the output
        print_log, args = True, args[1:]
    else:
        sys.exit("with_server.py: unknown option " + args[0])
split = args.index("--")
server_args, command = args[:split], args[split + 1:]

server = subprocess.Popen(
    ["pccx-serve", server_args[0], "--host", "127.0.0.1", "--port", "0"] + server_args[1:],
    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(code):
    if server.poll() is None:
        server.kill()
    sys.exit(code)


line = server.stdout.readline()  # the server prints it once it listens
match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", line)
if not match:
    print("FAIL: no 'listening on' line:", line, server.stderr.read() if server.poll() is not None else "")
    stop(1)
env = dict(os.environ, PCCX_URL=match.group(1), PCCX_SERVER_PID=str(server.pid))
try:
    run = subprocess.run(" ".join(command), shell=True, env=env, timeout=timeout,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
except subprocess.TimeoutExpired:
    print("FAIL: the command took more than %g s" % timeout)
    stop(1)
sys.stdout.write(run.stdout)
if run.returncode != 0:
    print("FAIL: the command exited with", run.returncode)
if server.poll() is None:  # the command may have stopped it already
    server.send_signal(signal.SIGTERM)
try:
    status = server.wait(timeout=30)
except subprocess.TimeoutExpired:
    print("FAIL: the server did not stop within 30 s of SIGTERM")
    stop(1)
err = server.stderr.read()
if print_log:
    sys.stdout.write(err)
print("server: exit", status)
if status != 0 or "stopped" not in err:
    print(err)
sys.exit(0 if status == 0 and run.returncode == 0 else 1)
