#!/usr/bin/env python3
"""Checks that no #include climbs back up the layers of docs/architecture.md.

    hw < runtime < dialects < passes < compiler < tools

A file may include its own layer and the layers below it. hw/ and runtime/
(the board's build) never include MLIR or LLVM. Prints every offending
include as FILE:LINE and exits 1 when there is one.
"""
import os
import re
import sys

LAYERS = ["hw", "runtime", "dialects", "passes", "compiler", "tools"]
RANK = {name: i for i, name in enumerate(LAYERS)}
MLIR_FREE = {"hw", "runtime"}
SOURCE = re.compile(r"\.(h|cpp|c|def|inc|td)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]')
TD_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"')


def check(root):
    problems = []
    checked = 0
    for layer in LAYERS:
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line) or (
                            name.endswith(".td") and TD_INCLUDE.match(line))
                        if not m:
                            continue
                        target = m.group(1)
                        top = target.split("/", 1)[0]
                        if top in ("mlir", "llvm") and layer in MLIR_FREE:
                            problems.append(
                                "%s:%d: %s/ includes %s; hw/ and runtime/ are "
                                "built without MLIR" % (rel, number, layer, target))
                        elif top in RANK and RANK[top] > RANK[layer]:
                            problems.append(
                                "%s:%d: %s/ includes %s, a layer above it "
                                "(%s)" % (rel, number, layer, target,
                                          " < ".join(LAYERS)))
    return checked, problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    checked, problems = check(root)
    for p in problems:
        print(p)
    print("%d files checked, %d includes climb the layers" % (checked, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
