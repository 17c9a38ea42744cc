"""Checks that every step of pccx-prof --json runs no faster than its
ceiling, and that the ceiling counts every streamed byte.

usage: ceiling.py PROFILE.json ...
"""
import json
import sys

runs = [json.load(open(path)) for path in sys.argv[1:]]
for run in runs:
    steps = [(d["position"], d["seconds_per_token"], d) for d in run["decode"]]
    if run["prefill"]:
        steps.append(("prefill", run["prefill"]["seconds_per_step"], run["prefill"]))
    for name, seconds, step in steps:
        c = step["ceiling"]
        counts = step["counts"]
        streamed = (counts["weight_bytes"] + counts["memcpy_bytes"] +
                    counts["lane_zero_bytes"])
        print("step", run["machine"], name, "within its ceiling",
              seconds >= c["seconds"] * (1 - 1e-9) and step["ceiling_fraction"] <= 1 + 1e-9,
              "bytes counted", streamed == c["bytes"] == sum(counts["port_bytes"].values()))
print("machines", " ".join(run["machine"] for run in runs))
# Position 0 of the first run against position 0 of the last.
print("as-built slower", runs[-1]["decode"][0]["seconds_per_token"] >
      runs[0]["decode"][0]["seconds_per_token"])
