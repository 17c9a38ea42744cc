"""Checks the agreement figures of `pccx-run --json --compare-reference`.

Usage: check_figures.py RESULT.json [--max-rel X] [--min-cosine C]
                        [--min-top1 F] [--rows N]
Exits 1 with a message naming the figure that misses its bound.
"""
import json
import sys


def main():
    args = sys.argv[1:]
    result = json.load(open(args.pop(0)))
    figures = result["compare_reference"]["vs_reference_same_weights"]
    bounds = dict(zip(args[::2], args[1::2]))
    failures = []
    if "--max-rel" in bounds and figures["rel_max_abs"] > float(bounds["--max-rel"]):
        failures.append("rel_max_abs %g > %s" % (figures["rel_max_abs"], bounds["--max-rel"]))
    if "--min-cosine" in bounds and figures["cosine"] < float(bounds["--min-cosine"]):
        failures.append("cosine %g < %s" % (figures["cosine"], bounds["--min-cosine"]))
    if "--min-top1" in bounds:
        frac = figures["top1_agree"] / figures["rows"]
        if frac < float(bounds["--min-top1"]):
            failures.append("top-1 agreement %g < %s" % (frac, bounds["--min-top1"]))
    if "--rows" in bounds and figures["rows"] != int(bounds["--rows"]):
        failures.append("rows %d != %s" % (figures["rows"], bounds["--rows"]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)
    print("ok: rel_max_abs %.3g cosine %.6f top1 %d/%d" % (
        figures["rel_max_abs"], figures["cosine"], figures["top1_agree"], figures["rows"]))


main()
