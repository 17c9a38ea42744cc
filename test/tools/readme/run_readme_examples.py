"""Runs the README's marked examples (<!-- readme-example: NAME --> followed
by an indented block) as written, in a scratch directory where tools/ is the
source tree's (the demo model) and gemma-3n-E2B-it/ is the tiny checkpoint
with a tokenizer and Gemma's chat template. The copy to a KV260 (scp) cannot
run here; the command ssh runs on the board, the chat on its CPU cores, runs
here as written. The demo model's chat and server replies must be text: not
empty, no turn markers, and ended by the model for at least one chat turn
and for the request.
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
os.symlink(os.path.join(os.path.dirname(os.path.abspath(readme)), "tools"),
           os.path.join(scratch, "tools"))
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

MARKERS = ("<start_of_turn>", "<end_of_turn>")


def is_text(reply):
    return bool(reply.strip()) and not any(m in reply for m in MARKERS)


compile_demo, chat = blocks["chat-sim"]
r = run(compile_demo)
print("compile demo:", r.returncode, os.path.exists(os.path.join(scratch, "demo.pccx")))
turns = ["In the beginning God created the heaven and the earth.", "Tell me of Moses."]
r = run(chat, stdin="".join(t + "\n" for t in turns))
lines = r.stdout.splitlines()
# Each turn is echoed ("> TEXT"), its reply streamed after it on one line;
# a reply that hit --max-new-tokens says so on stderr.
replies = [lines[i + 1] if i + 1 < len(lines) else "" for i, l in enumerate(lines) if l.startswith("> ")]
print("chat:", r.returncode, "turns", sum(l.startswith("> ") for l in lines), "| replies are text:",
      len(replies) == 2 and all(is_text(t) and not t.startswith("> ") for t in replies),
      "| ended by the model:",
      r.stderr.count("(reply cut") < len(replies))

(start,) = blocks["serve-start"]
print("$", start)
server = subprocess.Popen("exec " + start, shell=True, cwd=scratch, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
try:
    print("server:", server.stdout.readline().split(" (")[0])
    (curl,) = blocks["serve-curl"]
    r = run(curl, timeout=90)
    reply = json.loads(r.stdout)
    choice = reply["choices"][0]
    print("curl:", r.returncode, reply["object"], reply["model"], choice["message"]["role"],
          choice["finish_reason"], "| reply is text:", is_text(choice["message"]["content"]))
finally:
    server.send_signal(signal.SIGTERM)
    print("server exit:", server.wait(timeout=30))
