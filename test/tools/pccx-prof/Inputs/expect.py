"""Checks figures in pccx-prof --json output against hand-computed values.

usage: expect.py FILE.json PATH=VALUE ...
PATH is a dotted path into the JSON (list indices as numbers); VALUE is a
Python expression. Prints 'ok PATH' or 'MISMATCH PATH: got X, expected Y'
(relative tolerance 1e-6).
"""
import json
import sys

data = json.load(open(sys.argv[1]))
for item in sys.argv[2:]:
    path, expr = item.split("=", 1)
    node = data
    for key in path.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    expected = float(eval(expr))
    got = float(node)
    if abs(got - expected) <= 1e-6 * max(abs(expected), 1e-15):
        print("ok", path)
    else:
        print("MISMATCH %s: got %r, expected %r" % (path, got, expected))
