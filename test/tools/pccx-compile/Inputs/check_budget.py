"""Checks a pccx-compile --int8-budget report.

Usage: check_budget.py REPORT BUDGET TENSORS
Every quantized tensor appears once (TENSORS lines); the tensors marked
"-> int8" spend at most BUDGET (a fraction) of the INT4 bytes; and no
unchosen tensor that would still fit has a better KL per extra byte than a
chosen one (the greedy order).
"""
import re
import sys


def main():
    report, budget, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    line = re.compile(r"int8-budget: (\S+)\s+KL ([0-9.]+)  int4 (\d+) bytes, "
                      r"int8 \+(\d+)(  -> int8)?$")
    rows = []
    for text in open(report):
        m = line.match(text.strip())
        if m:
            rows.append((m.group(1), float(m.group(2)), int(m.group(3)),
                         int(m.group(4)), bool(m.group(5))))
    names = [r[0] for r in rows]
    failures = []
    if len(rows) != count or len(set(names)) != count:
        failures.append("%d tensors measured (%d distinct), expected %d"
                        % (len(rows), len(set(names)), count))
    total = sum(r[2] for r in rows)
    spent = sum(r[3] for r in rows if r[4])
    if spent > budget * total:
        failures.append("spent %d of %d allowed" % (spent, budget * total))
    chosen = [r for r in rows if r[4]]
    if not chosen:
        failures.append("nothing chosen")
    gain = lambda r: r[1] / max(1, r[3])  # INT8 can cost no extra bytes
    worst = min((gain(r) for r in chosen), default=0)
    for r in rows:
        if not r[4] and r[1] > 0 and gain(r) > worst and \
                spent + r[3] <= budget * total:
            failures.append("%s fits and beats a chosen tensor" % r[0])
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)
    print("ok: %d of %d tensors in int8, %d of %d bytes" %
          (len(chosen), len(rows), spent, int(budget * total)))


if __name__ == "__main__":
    main()
