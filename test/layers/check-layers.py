#!/usr/bin/env python3
"""Checks that no #include climbs back up the floors of docs/architecture.md.

    hw < runtime < dialects < passes < compiler < tools, bench

and, inside the two floors the board builds, the rooms in their order:

    hw:      support < isa < numerics < machine < abi
    runtime: bundle < import < tokenizer < grammar < reference < sim
             < conformance < host < devices < exec < prof < app < serve
             < capi

A file may include its own floor (and room) and the ones below it. hw/ and
runtime/ (the board's build) never include MLIR or LLVM. A folder of hw/ or
runtime/ that is not in the order is an error too, so that a new one is
placed. Prints every offence as FILE:LINE and exits 1 when there is one.
"""
import os
import re
import sys

FLOORS = ["hw", "runtime", "dialects", "passes", "compiler", "tools", "bench"]
# bench/ sits beside tools/: both are mains over the libraries.
RANK = {name: i for i, name in enumerate(FLOORS)}
RANK["bench"] = RANK["tools"]
ROOMS = {
    "hw": ["support", "isa", "numerics", "machine", "abi"],
    "runtime": ["bundle", "import", "tokenizer", "grammar", "reference", "sim",
                "conformance", "host", "devices", "exec", "prof", "app",
                "serve", "capi"],
}
# Folders of runtime/ without C++ (the Python module) need no rank.
NO_CODE = {"python"}
MLIR_FREE = {"hw", "runtime"}
SOURCE = re.compile(r"\.(h|cpp|c|def|inc|td)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]')
TD_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"')


def room_of(floor, rel_parts):
    """The room (first folder under the floor) of a path, or None."""
    return rel_parts[1] if floor in ROOMS and len(rel_parts) > 2 else None


def check_include(rel, number, floor, room, target, problems):
    parts = target.split("/")
    top = parts[0]
    if top in ("mlir", "llvm") and floor in MLIR_FREE:
        problems.append("%s:%d: %s/ includes %s; hw/ and runtime/ are built "
                        "without MLIR" % (rel, number, floor, target))
    elif top in RANK and RANK[top] > RANK[floor]:
        problems.append("%s:%d: %s/ includes %s, a floor above it (%s)" %
                        (rel, number, floor, target, " < ".join(FLOORS[:-1])))
    elif top == floor and room and len(parts) > 2:
        order = ROOMS[floor]
        other = parts[1]
        if other in order and room in order and \
                order.index(other) > order.index(room):
            problems.append("%s:%d: %s/%s includes %s, a room above it "
                            "(%s)" % (rel, number, floor, room, target,
                                      " < ".join(order)))


def check(root):
    problems = []
    checked = 0
    for floor in FLOORS:
        base = os.path.join(root, floor)
        if floor in ROOMS and os.path.isdir(base):
            for entry in sorted(os.listdir(base)):
                if (os.path.isdir(os.path.join(base, entry)) and
                        entry not in ROOMS[floor] and entry not in NO_CODE):
                    problems.append("%s/%s/: a folder without a place in the "
                                    "order of %s/ (%s)" %
                                    (floor, entry, floor,
                                     " < ".join(ROOMS[floor])))
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                room = room_of(floor, rel.split(os.sep))
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line) or (
                            name.endswith(".td") and TD_INCLUDE.match(line))
                        if m:
                            check_include(rel, number, floor, room,
                                          m.group(1), problems)
    return checked, problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    checked, problems = check(root)
    for p in problems:
        print(p)
    print("%d files checked, %d includes climb the layers" %
          (checked, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
