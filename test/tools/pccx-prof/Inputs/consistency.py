"""Compares pccx-prof's replay counts with pccx-run's statistics.

usage: consistency.py PROF.json DECODE_RUN.json PREFILL_RUN.json
PROF.json is pccx-prof --json at positions 0..N-1; DECODE_RUN.json is
pccx-run --json of N tokens through the decode program (its stats are
totals over the N steps); PREFILL_RUN.json is pccx-run --json of exactly
two prefill steps: the first, whose logits nobody reads, runs the program
without the LM head (PROF's prefill), the second, which ends the prompt,
the one with it (PROF's prefill.with_lm_head).
"""
import json
import sys

prof = json.load(open(sys.argv[1]))
decode = json.load(open(sys.argv[2]))["stats"]
prefill = json.load(open(sys.argv[3]))["stats"]
keys = ["instructions", "host_ops", "syncs", "weight_bytes", "kv_record_bytes"]
steps = len(prof["decode"])
print("decode steps", steps, decode["steps"])
for k in keys:
    total = sum(d["counts"][k] for d in prof["decode"])
    print("decode", k, "equal" if total == decode[k] else
          "DIFFER %d vs %d" % (total, decode[k]))
print("prefill steps", prefill["steps"])
for k in keys:
    ours = prof["prefill"]["counts"][k] + prof["prefill"]["with_lm_head"]["counts"][k]
    print("prefill", k, "equal" if ours == prefill[k] else
          "DIFFER %d vs %d" % (ours, prefill[k]))
for d in prof["decode"] + [prof["prefill"]]:
    total = sum(d["breakdown"].values())
    step = d.get("seconds_per_token", d.get("seconds_per_step"))
    print("breakdown sums to the step", abs(total - step) <= 1e-9 * step)
