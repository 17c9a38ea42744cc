"""Runs every shell command of the documentation (README.md, docs/*.md,
bench/README.md): every line of a ```sh block, each line of another
indented or fenced code block that starts with a command (a pccx tool, make,
python3, curl, bench/..., ...), and each Python example. It runs as written, in a scratch directory where the
documents' generic names are real inputs:

  CKPT_DIR     a tiny checkpoint (pccx-make-checkpoint's tiny sizes with a
               vocabulary big enough for the documents' token ids) with the
               chat tests' tokenizer (Gemma's turn markers)
  model.pccx   CKPT_DIR compiled with pccx-compile's defaults
  batch.pccx   CKPT_DIR compiled with --decode-batch 8
  text.txt     the start of the demo model's held-out text
  turns.txt    two chat turns
  board.txt    a pccx-prof parameter file (pccx-prof --calibrate)
  results      the conformance suite itself (a valid results directory)
  build, bench, runtime, tools
               the build tree and the source folders

A command that cannot run here is in SKIPPED with the reason; every other
one runs (a synopsis or a make target as in INSTANCES), so a new command
that cannot run here fails the run until it is listed, and so does a listed
one that no document has any more. The README's
marked examples (<!-- readme-example: NAME -->) are run by
test/tools/readme/run_readme_examples.py.

usage: run_doc_commands.py SOURCE_DIR BUILD_DIR SCRATCH_DIR [LD_PRELOAD=LIB]
"""
import glob
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

src, build, scratch = (os.path.abspath(a) for a in sys.argv[1:4])
# LD_PRELOAD=... in the sanitizer tree, where python3 loads libpccxrt.so only
# with the sanitizer runtime first.
preload = dict([sys.argv[4].split("=", 1)]) if len(sys.argv) > 4 and sys.argv[4] else {}
# Seconds a command may take (a few here): the sanitizer tree (preload set)
# runs several times slower, make demo there about 3 minutes on a 2-core VM.
TIMEOUT = 600 if preload else 180

# Why each of these is not run. Keys are the commands as the documents
# write them, without comments and line continuations.
BOARD = "runs on the KV260 board (the overlay's /dev/uio and u-dma-buf)"
SYNOPSIS = "a usage synopsis (bracketed options, placeholders), not a command"
BENCH = "a benchmark of minutes (full-size or E2B-shaped checkpoints)"
SKIPPED = {
    # README.md
    "make test": "builds the tree and runs every test, this one included",
    "python3 -m venv ~/hf && ~/hf/bin/pip install 'huggingface_hub>=1.0'":
        "installs the Hugging Face client from PyPI (network)",
    "pccx-compile gemma-3n-E2B-it -o gemma-3n-E2B-it.pccx":
        "needs the gated Gemma 3n checkpoint downloaded (network, a Hugging Face account, 11 GB)",
    "pccx-run gemma-3n-E2B-it.pccx --chat": "needs the bundle of the real checkpoint above",
    # docs/kv260.md
    "make aarch64": "the cross build of the board's runtime (minutes); make test runs it",
    "apt-get install cmake ninja-build g++ nlohmann-json3-dev libxxhash-dev libsentencepiece-dev":
        "installs packages on the board (root, network)",
    "cmake -G Ninja -S . -B build -DPCCX_RUNTIME_ONLY=ON": "the board's own build (minutes)",
    "ninja -C build": "the board's own build (minutes)",
    "modprobe u-dma-buf udmabuf0=1342177280": BOARD + ": loads its DMA buffer driver",
    "pccx-run model.pccx --device kv260 --prompt \"The capital of France is\" --max-new-tokens 32": BOARD,
    "pccx-run model.pccx --device kv260 --uio-name pccx-npu --udmabuf udmabuf0 --tokens 2,818,5088 --json": BOARD,
    "ls /dev/dma_heap/": BOARD + ": lists its CMA heaps",
    "pccx-run model.pccx --device kv260 --dma-buffer dma-heap --dma-heap reserved --dma-heap-mib 1280 --prompt \"Hello\"": BOARD,
    # docs/demo-model.md
    "apt-get install python3-torch python3-sentencepiece bible-kjv libopenblas0-serial": "installs packages (root, network)",
    "/usr/bin/python3 tools/train-demo-model/train.py --pccx-bin build/bin --tokenizer-model tools/demo-model/tokenizer.model": "trains the demo model (about 15 minutes, python3-torch)",
    # docs/matformer.md (test/tools/pccx-compile/matformer.test runs each on an
    # E4B-shaped checkpoint; the scratch tree's tiny one is not)
    "pccx-compile E4B_DIR --matformer-slice E2.54B-layer -o e254.pccx": "needs an E4B-shaped checkpoint",
    "pccx-compile E4B_DIR --matformer-slice my-slice.json -o mine.pccx": "needs an E4B-shaped checkpoint",
    "pccx-make-checkpoint --from E4B_DIR --matformer-slice E2B -o E2B_DIR": "needs an E4B-shaped checkpoint",
    "pccx-run e254.pccx --prompt \"...\" --compare-reference E4B_DIR": "needs an E4B-shaped checkpoint",
    "pccx-reference E4B_DIR --matformer-slice E2B --tokens 2,651,...": "needs an E4B-shaped checkpoint",
    "bench/matformer-slices.sh BUILD_DIR E4B_DIR WORK_DIR [--max-seq-len N]": SYNOPSIS + "; " + BENCH,
    # bench/README.md
    "bench/quality.sh BUILD_DIR [WORK_DIR] [MAX_WINDOWS] [ONLY]": SYNOPSIS + "; " + "about 15 minutes",
    "bench/cpu-decode.sh BUILD_DIR WORK_DIR [LAYERS] [--tokens N] [--threads 1,2] [--numerics integer|hardware] [--isa KERNEL]": SYNOPSIS + "; " + BENCH,
    "bench/llama-side-by-side.sh BUILD_DIR WORK_DIR PEER_DIR [--layers 10,30] [--threads 1,N] [--rounds R] [--tokens T] [--numerics integer[,hardware]]":
        SYNOPSIS + "; " + BENCH + ", beside llama.cpp (node, npm and the peer kit)",
    "bench/compile-full.sh BUILD_DIR e2b|e4b WORK_DIR [--compile-only]": SYNOPSIS + "; " + BENCH,
    "bench/prof-full.sh BUILD_DIR e2b|e4b WORK_DIR [pccx-prof options]": SYNOPSIS + "; " + BENCH,
    "make fuzz-build && bench/fuzz.sh SECONDS_PER_TARGET [build-fuzz]": SYNOPSIS + "; builds the clang fuzz tree (make fuzz-smoke runs it)",
    "bench/batch-decode.sh BUILD_DIR WORK_DIR [LAYERS] [--batch 1,2,4,8] [--steps N] [--threads T] [--numerics integer|hardware]": SYNOPSIS + "; " + BENCH,
    "bench/serve-parallel.py --build build --work WORK [--clients 4] [--max-tokens 16] [--requests 2]": SYNOPSIS + "; " + BENCH,
    "bench/speculative.sh BUILD_DIR WORK_DIR [DRAFT_TOKENS]": SYNOPSIS + "; " + BENCH,
    "bench/serve-budgets.py [--build DIR] [--timeout S]": SYNOPSIS + "; a benchmark of a minute "
        "(its cases are tests: serve/ServerTests.cpp ServeBudget, pccx-serve/logprobs.test)",
    "bench/a53-estimate.sh [WORK_DIR]": SYNOPSIS + "; needs the aarch64 cross compiler and llvm-19, "
        "which make test installs but the documents' scratch tree does not assume",
    "bench/reuse-property.sh BUILD_DIR WORK_DIR [PROGRAMS] [SEQUENCES]": SYNOPSIS +
        "; minutes (its short mode is in make test: app/ReuseTests.cpp, pccx-serve/reuse.test)",
}

# Synopses run as one instance each, and make targets that build as what
# they run once built: the documented line, then what runs for it.
INSTANCES = {
    "make demo": "tools/demo.sh build demo-out",
    "pccx-objdump [--headers] [--sections] [--manifest] [--manifest-json] [--info] [-d] [--all] [--no-verify] FILE.pccx...":
        "pccx-objdump --headers --sections --manifest --manifest-json --info -d --all --no-verify model.pccx batch.pccx",
    "pccx-objdump --export-effective-weights DIR FILE.pccx":
        "pccx-objdump --export-effective-weights effective model.pccx",
    "pccx-objdump --raw [--target T] WORD...":
        "pccx-objdump --raw --target v002-rtl 0x3420008000800010 0x2800200000000204",
    "pccx-as INPUT.s -o OUT.pccx [--program NAME] [--manifest-json FILE] [--weights FILE] [--target T]":
        "pccx-as test/tools/pccx-as/Inputs/small.s -o small.pccx --program main "
        "--manifest-json test/tools/pccx-as/Inputs/small-manifest.json --weights text.txt --target v002",
    "pccx-run model.pccx --chat [--system TEXT] [--max-new-tokens N] [--temperature T ...]":
        "pccx-run model.pccx --chat --system Terse. --max-new-tokens 8 --temperature 0.7 --top-p 0.9",
    "pccx-serve MODEL.pccx [--host 127.0.0.1] [--port 8080] [--model-name NAME | -a NAME] [--device sim|kv260] "
    "[device options: --numerics MODE, --threads N, --uio-name NAME, --udmabuf NAME, --dma-window MODE, "
    "--dma-buffer SOURCE, --dma-heap NAME, --dma-heap-mib N, --device-option KEY=VALUE] [--max-body-bytes N] [--max-tokens-limit N] [--max-prompts N] "
    "[--max-request-tokens N] [--max-scored-tokens N] [--max-queue N] [--parallel N] "
    "[--connection-threads N] [--request-timeout S] [--idle-timeout S] [--host-threads N] [--ctx-size N] [--context-shift] "
    "[--draft ngram [--draft-tokens K]] [--markers-in-text] [--quiet] "
    "[--api-key KEY | --api-key-file FILE] [--cors-origin ORIGIN ...] [--no-webui] [--chat-template-file FILE] "
    "[--max-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--presence-penalty X] "
    "[--frequency-penalty X] [--seed S]":
        "pccx-serve batch.pccx --host 127.0.0.1 --port 8080 --model-name m --device sim --numerics reference "
        "--threads 1 --max-body-bytes 4096 --max-tokens-limit 64 --max-prompts 4 --max-request-tokens 512 "
        "--max-scored-tokens 128 --max-queue 2 --parallel 1 --connection-threads 2 "
        "--request-timeout 5 --idle-timeout 2 --host-threads 2 --ctx-size 64 --context-shift --draft ngram --draft-tokens 3 --markers-in-text "
        "--quiet --api-key-file key.txt --cors-origin '*' --no-webui "
        "--chat-template-file test/tools/pccx-serve/Inputs/gemma-template.jinja --max-n 4 --temp 0.7 --top-k 40 "
        "--top-p 0.95 --min-p 0.05 --repeat-penalty 1.1 --presence-penalty 0 --frequency-penalty 0 --seed 1",
    "build/bin/bench-sim-gemv [--reps R] [--threads T] [--isa KERNEL] [--hardware | --integer] [--group G]":
        "build/bin/bench-sim-gemv --reps 1 --threads 1 --integer",
    "build/bin/bench-sampler [--vocab V] [--reps R]": "build/bin/bench-sampler --vocab 4096 --reps 2",
    "build/bin/bench-json-mask [--tokenizer MODEL | --vocab-size V] [--bundle BUNDLE] [--threads N] [--steps S]":
        "build/bin/bench-json-mask --vocab-size 4096 --bundle model.pccx --threads 1 --steps 2",
    "bench/serve-load.py [--build build] [--bundle FILE.pccx] [--timeout 300]":
        "bench/serve-load.py --build build --timeout 60",
    "build/bin/pccx-prof BUNDLE --batch B [--positions P] [--machine kv260-as-built]":
        "build/bin/pccx-prof batch.pccx --batch 4 --positions 64 --machine kv260-as-built",
}

# The first word of a command line (after an optional "$ " and VAR=value).
COMMAND = re.compile(r"^(\$ )?([A-Z_]+=\S* )*(pccx-[\w-]+|bench-[\w-]+|build[\w-]*/bin/\S+|bench/\S+|tools/\S+|"
                     r"make|python3|/usr/bin/python3|curl|scp|ssh|apt-get|sudo|cmake|ninja|git|sh|bash|"
                     r"spm_train|FileCheck|node|npm)(\s|$)")


def documents():
    return ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md"))) \
        + ["bench/README.md"]


def blocks(path):
    """(line, language, [lines]) of every fenced and indented code block,
    leaving out the README's marked examples."""
    lines = open(os.path.join(src, path)).read().split("\n")
    i, prev_blank, marked = 0, True, False
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)```(\w*)", line)
        if fence:
            indent, body, j = len(fence.group(1)), [], i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                body.append(lines[j][indent:])
                j += 1
            yield i + 1, fence.group(2), body
            i, prev_blank, marked = j + 1, False, False
            continue
        if prev_blank and line.startswith("    ") and line.strip():
            body, j = [], i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                body.append(lines[j][4:])
                j += 1
            while body and not body[-1].strip():
                body.pop()
            if not marked:
                yield i + 1, "", body
            i, prev_blank, marked = j, False, False
            continue
        marked = line.startswith("<!-- readme-example:") or (marked and not line.strip())
        prev_blank = not line.strip() or marked
        i += 1


def commands():
    """(file:line, kind, text, key): kind is "sh" or "python"; key is the
    text without comments and continuations, as SKIPPED spells it."""
    found = []
    for path in documents():
        for start, lang, body in blocks(path):
            first = next((l for l in body if l.strip()), "")
            if lang == "python" or (lang == "" and first.startswith("import ")):
                found.append(("%s:%d" % (path, start + (1 if lang else 0)), "python", "\n".join(body), first.strip()))
                continue
            if lang not in ("", "sh", "bash", "shell"):
                continue
            j = 0
            while j < len(body):
                k, text = j, body[j]
                while text.rstrip().endswith("\\") and k + 1 < len(body):
                    k += 1
                    text = text.rstrip()[:-1] + " " + body[k].strip()
                # A synopsis goes on with lines indented under its first.
                while k + 1 < len(body) and body[k + 1].startswith("   ") and not COMMAND.match(body[k + 1].strip()):
                    k += 1
                    text += " " + body[k].strip()
                text = text.strip()
                if COMMAND.match(text) or (lang in ("sh", "bash", "shell") and text and not text.startswith("#")):
                    text = re.sub(r"^\$ ", "", text)
                    found.append(("%s:%d" % (path, start + j + (1 if lang else 0)), "sh", text, key(text)))
                j = k + 1
    return found


def key(text):
    return re.sub(r"\s+", " ", re.sub(r"\s+#(\s.*)?$", "", text)).strip()


def setup():
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    for name, target in (("bench", os.path.join(src, "bench")), ("test", os.path.join(src, "test")),
                         ("runtime", os.path.join(src, "runtime")), ("tools", os.path.join(src, "tools"))):
        os.symlink(target, os.path.join(scratch, name))
    # build/bin is where the tests find the tools (lit puts them first on PATH).
    os.makedirs(os.path.join(scratch, "build"))
    os.symlink(os.path.dirname(shutil.which("pccx-run")), os.path.join(scratch, "build", "bin"))
    os.symlink(os.path.join(build, "lib"), os.path.join(scratch, "build", "lib"))
    demo = os.path.join(src, "tools", "demo-model")
    config = json.loads(subprocess.run(["pccx-make-checkpoint", "--preset", "tiny", "--print-config"],
                                       check=True, capture_output=True, text=True).stdout)
    # Gemma's token ids (2,818,5088 in the documents) must be in the vocabulary.
    config["vocab_size"] = 8192
    json.dump(config, open(os.path.join(scratch, "tiny-config.json"), "w"))
    subprocess.run(["pccx-make-checkpoint", "--config", "tiny-config.json", "-o", "CKPT_DIR"], cwd=scratch,
                   check=True, capture_output=True)
    # The tokenizer of the chat tests: Gemma's turn markers are single pieces.
    subprocess.run(["sh", os.path.join(src, "test", "tools", "pccx-run", "Inputs", "make_chat_checkpoint.sh"),
                    os.path.join(scratch, "chat")], check=True)
    shutil.copy(os.path.join(scratch, "chat", "tokenizer.model"), os.path.join(scratch, "CKPT_DIR"))
    subprocess.run(["pccx-compile", "CKPT_DIR", "--quiet", "-o", "model.pccx"], cwd=scratch, check=True)
    subprocess.run(["pccx-compile", "CKPT_DIR", "--quiet", "--decode-batch", "8", "-o", "batch.pccx"], cwd=scratch,
                   check=True)
    with open(os.path.join(demo, "heldout.txt")) as f:
        open(os.path.join(scratch, "text.txt"), "w").write(f.read(4000))
    open(os.path.join(scratch, "turns.txt"), "w").write("In the beginning\nAnd then?\n")
    open(os.path.join(scratch, "key.txt"), "w").write("secret\n")
    subprocess.run(["pccx-prof", "--calibrate", "board.txt"], cwd=scratch, check=True, capture_output=True)
    os.symlink("suite", os.path.join(scratch, "results"))


def environment(kind, text=""):
    env = dict(os.environ)
    env["PCCXRT_LIBRARY"] = os.path.join(scratch, "build", "lib", "libpccxrt.so")
    if kind == "python":
        # As the example's comment says: PYTHONPATH=runtime/python.
        env["PYTHONPATH"] = os.path.join(scratch, "runtime", "python")
        env.update(preload)
    elif "import pccxrt" in text:
        # A shell command whose Python loads libpccxrt.so (a virtual
        # environment's interpreter): the sanitizer runtime goes first too.
        env.update(preload)
    return env


def stop(process):
    """Kills what a command left running: its whole process group (each
    command runs in a session of its own)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    return process.communicate()[1]


def execute(argv, kind, stdin=None):
    """(status, stderr) of one command, bounded in time."""
    process = subprocess.Popen(argv, shell=isinstance(argv, str), cwd=scratch,
                               env=environment(kind, argv if isinstance(argv, str) else " ".join(argv)),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        _, err = process.communicate(stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        stop(process)
        return "timeout", "no exit within %d s" % TIMEOUT
    return process.returncode, err


def serve(text):
    """Starts a server command, asks /health on the port it prints and stops
    it with SIGTERM; its status must be 0. Port 8080 becomes 0 (a free
    one): the README's test and other servers may hold 8080."""
    text = re.sub(r"--port 8080\b", "--port 0", text)
    server = subprocess.Popen("exec " + text, shell=True, cwd=scratch, env=environment("sh"),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        ready = select.select([server.stdout], [], [], TIMEOUT)[0]
        m = re.search(r"listening on (http://\S+)", server.stdout.readline() if ready else "")
        if not m:
            err = stop(server)
            return server.returncode or "no listening line", err
        health = subprocess.run(["curl", "-sf", "--max-time", "20", m.group(1) + "/health"],
                                capture_output=True, text=True)
        if health.returncode != 0 or json.loads(health.stdout).get("status") != "ok":
            stop(server)
            return "GET /health failed", health.stdout
        server.terminate()
        _, err = server.communicate(timeout=30)
        return server.returncode, err
    except subprocess.TimeoutExpired:
        stop(server)
        return "no exit within 30 s of SIGTERM", ""


def run(kind, text):
    """(status, stderr) of one command, run in the scratch directory."""
    if kind == "python":
        return execute(["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3", "-c", text], kind)
    if re.match(r"(build/bin/)?pccx-serve ", text):
        return serve(text)
    # A chat reads its turns from stdin.
    return execute(text, kind, stdin="In the beginning\n")


def main():
    found = commands()
    setup()
    ran, skipped, failed, seen = 0, {}, [], set()
    for where, kind, text, k in found:
        seen.add(k)
        if k in SKIPPED:
            skipped.setdefault(SKIPPED[k], []).append(where)
            print("skip %s: %s" % (where, k))
            continue
        shown = "python: " + k if kind == "python" else k
        if k in INSTANCES:
            text = INSTANCES[k]
            shown = k + "  =>  " + text
        t = time.time()
        rc, err = run(kind, text)
        print("run  %s: %s -> %s (%.1f s)" % (where, shown, rc, time.time() - t))
        if rc != 0:
            failed.append((where, shown, err.strip().splitlines()[-1:]))
        ran += 1
    for where, shown, err in failed:
        print("FAILED %s: %s%s" % (where, shown, (" | " + err[0]) if err else ""))
    stale = sorted((set(SKIPPED) | set(INSTANCES)) - seen)
    for k in stale:
        print("LISTED BUT IN NO DOCUMENT: %s" % k)
    print("skipped:")
    for reason, wheres in sorted(skipped.items()):
        print("  %d (%s): %s" % (len(wheres), " ".join(wheres), reason))
    print("commands: %d run, %d failed, %d skipped, %d listed but in no document"
          % (ran, len(failed), sum(len(w) for w in skipped.values()), len(stale)))
    sys.exit(1 if failed or stale or ran == 0 else 0)


main()
