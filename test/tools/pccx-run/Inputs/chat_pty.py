"""Runs a command on a pseudo-terminal as a person would use it: keys are
typed only once the program shows its prompt.

Usage: chat_pty.py [--cols N] [--history-check FILE] -- KEYS... -- COMMAND...

--cols N   the terminal's width (0: the terminal reports no size, as
           script(1)'s does when its input is a pipe); default 80
KEYS       one argument per prompt, in Python string-escape notation
           ("/help\\r", "\\x03"): typed after the next "> " or ". " prompt
           (or, when none comes within 2 s, anyway), once a line editor has
           the terminal in its own mode (or after 1 s without one)

Prints what the terminal showed (carriage returns and escape sequences
removed), then "exit N".
"""
import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time


def main():
    args = sys.argv[1:]
    cols = 80
    while args and args[0] != "--":
        if args[0] == "--cols":
            cols = int(args[1])
            args = args[2:]
        else:
            sys.exit("unknown option " + args[0])
    args = args[1:]
    split = args.index("--")
    keys = [k.encode().decode("unicode_escape").encode("latin-1")
            for k in args[:split]]
    command = args[split + 1:]

    pid, fd = os.forkpty()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execvp(command[0], command)
    if cols:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        # The child may have read the size before it was set.
        os.kill(pid, signal.SIGWINCH)

    output = b""
    prompts = 0
    deadline = time.time() + 120

    def pump(timeout):
        nonlocal output
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        output += data
        return True

    def prompt_count():
        text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", output)
        return len(re.findall(rb"(?:^|[\r\n])[>.] ", text))

    alive = True
    for key in keys:
        waited = time.time()
        while alive and prompt_count() <= prompts and time.time() - waited < 2:
            alive = pump(0.05)
        prompts = prompt_count()
        if not alive:
            break
        # A line editor reads keys in its own mode: wait for it to take the
        # terminal (keys typed before meet the terminal's line discipline,
        # where Ctrl-D is end of file); without one the mode stays.
        waited = time.time()
        while time.time() - waited < 1:
            if not termios.tcgetattr(fd)[3] & termios.ICANON:
                break
            alive = pump(0.01)
        time.sleep(0.05)
        os.write(fd, key)
    while alive and time.time() < deadline:
        alive = pump(0.2)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while pump(0.1):
                pass
            break
    else:
        if alive:  # out of time
            os.kill(pid, signal.SIGKILL)
        done, status = os.waitpid(pid, 0)
    text = output.decode("utf-8", "replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\x07", "", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    sys.stdout.write(text)
    code = os.waitstatus_to_exitcode(status)
    print("\nexit %d" % code)


main()
