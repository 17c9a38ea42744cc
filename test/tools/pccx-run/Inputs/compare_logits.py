"""Compares two --dump-logits files row by row.

Usage: compare_logits.py A.bin B.bin VOCAB MAX_REL
Fails if the row counts differ or any row's max |a - b| exceeds MAX_REL
times that row's range in B.
"""
import array
import sys

a = array.array("f", open(sys.argv[1], "rb").read())
b = array.array("f", open(sys.argv[2], "rb").read())
vocab, max_rel = int(sys.argv[3]), float(sys.argv[4])
if len(a) != len(b) or len(a) % vocab:
    print("FAILED: sizes %d and %d" % (len(a), len(b)))
    sys.exit(1)
worst = 0.0
for r in range(len(a) // vocab):
    ra, rb = a[r * vocab:(r + 1) * vocab], b[r * vocab:(r + 1) * vocab]
    span = max(rb) - min(rb)
    diff = max(abs(x - y) for x, y in zip(ra, rb))
    worst = max(worst, diff / span if span else diff)
if worst > max_rel:
    print("FAILED: relative max-abs difference %g > %g" % (worst, max_rel))
    sys.exit(1)
print("ok: %d rows, relative max-abs difference %.3g" % (len(a) // vocab, worst))
