"""Runs the README's marked examples (<!-- readme-example: NAME --> followed
by an indented block) as written, in a scratch directory where
gemma-3n-E2B-it/ is the tiny checkpoint with a tokenizer and Gemma's chat
template. The copy to a KV260 (scp) cannot run here; the command ssh runs on
the board, the chat on its CPU cores, runs here as written.
usage: run_readme_examples.py README.md SCRATCH_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

readme, scratch = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))


def examples():
    blocks, lines = {}, open(readme).read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"<!-- readme-example: (\S+) -->", line)
        if not m:
            continue
        body, j = [], i + 1
        while j < len(lines) and lines[j].startswith("    "):
            body.append(lines[j][4:])
            j += 1
        text = "\n".join(body).replace("\\\n", "")
        blocks[m.group(1)] = [c.strip() for c in text.split("\n") if c.strip()]
    return blocks


def run(command, stdin=None, timeout=120):
    print("$", command)
    return subprocess.run(command, shell=True, cwd=scratch, input=stdin, text=True,
                          capture_output=True, timeout=timeout)


blocks = examples()
print("examples:", " ".join(sorted(blocks)))
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
ckpt = os.path.join(scratch, "gemma-3n-E2B-it")
subprocess.run(["sh", os.path.join(here, "..", "pccx-run", "Inputs", "make_chat_checkpoint.sh"), ckpt],
               check=True, timeout=120)
template = open(os.path.join(here, "..", "pccx-compile", "Inputs", "gemma-chat-template.jinja")).read()
json.dump({"chat_template": template}, open(os.path.join(ckpt, "tokenizer_config.json"), "w"))

compile_cmd, copy_cmd, board_cmd = blocks["chat-board"]
r = run(compile_cmd)
print("compile:", r.returncode, os.path.exists(os.path.join(scratch, "gemma-3n-E2B-it.pccx")))
print("copy to the board:", copy_cmd.split()[0], "(not run)")
board = board_cmd.split(" ", 3)[3]  # what ssh runs on the board
r = run(board, stdin="Hello!\n")
print("board command:", r.returncode, r.stdout.splitlines()[0] if r.stdout else "", "| reply lines:",
      len(r.stdout.splitlines()) - 1)

(chat,) = blocks["chat-sim"]
r = run(chat, stdin="Hello!\n")
print("chat:", r.returncode, r.stdout.splitlines()[0] if r.stdout else "", "| reply lines:",
      len(r.stdout.splitlines()) - 1)

(start,) = blocks["serve-start"]
print("$", start)
server = subprocess.Popen("exec " + start, shell=True, cwd=scratch, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
try:
    print("server:", server.stdout.readline().split(" (")[0])
    (curl,) = blocks["serve-curl"]
    r = run(curl, timeout=90)
    reply = json.loads(r.stdout)
    print("curl:", r.returncode, reply["object"], reply["model"], reply["choices"][0]["message"]["role"],
          reply["choices"][0]["finish_reason"])
finally:
    server.send_signal(signal.SIGTERM)
    print("server exit:", server.wait(timeout=30))
