#!/bin/sh
# Modelled KV260 figures of a full-size bundle: generates the synthetic
# checkpoint (if WORK_DIR has none), compiles it with --max-seq-len 2048
# (if WORK_DIR has no bundle yet), and prints pccx-prof's decode figures at
# positions 128, 512 and 2047 and its prefill figure as a table, with the
# ceiling its streamed bytes allow and the top critical-path items.
# `--machine kv260-as-built` (among the pccx-prof options) models the
# overlay as built instead of as documented.
#
# Usage: bench/prof-full.sh BUILD_DIR PRESET WORK_DIR [pccx-prof options]
#   (PRESET e2b or e4b; WORK_DIR needs ~1.3x the checkpoint size free)
set -eu
BIN="$1/bin"
PRESET="$2"
WORK="$3"
shift 3
CKPT="$WORK/$PRESET"
BUNDLE="$WORK/$PRESET.pccx"
mkdir -p "$WORK"
if [ ! -f "$BUNDLE" ]; then
  if [ ! -f "$CKPT/config.json" ]; then
    echo "generating $PRESET into $CKPT ..." >&2
    "$BIN/pccx-make-checkpoint" --preset "$PRESET" -o "$CKPT" --overwrite >&2
  fi
  echo "compiling $BUNDLE ..." >&2
  "$BIN/pccx-compile" "$CKPT" --max-seq-len 2048 -o "$BUNDLE" >&2
fi
"$BIN/pccx-prof" "$BUNDLE" --positions 128,512,2047 --json "$@" > "$WORK/prof.json"
python3 - "$PRESET" "$WORK/prof.json" <<'PY'
import json, sys
preset, path = sys.argv[1:]
j = json.load(open(path))
def ceiling(step):
    c = step["ceiling"]
    return f"{c['seconds'] * 1e3:.1f} ({c['mb_per_s']:.0f})"
def top(step, seconds):
    items = sorted(step["breakdown"].items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{k} {100 * v / seconds:.0f} %" for k, v in items)
print(f"machine {j['machine']}")
print(f"| model | step | ms | tok/s | weight MiB/step | ceiling ms (MB/s) | ceiling fraction | top critical-path items |")
print(f"|---|---|---:|---:|---:|---:|---:|---|")
for d in j["decode"]:
    s = d["seconds_per_token"]
    print(f"| {preset} | decode @ {d['position']} | {s * 1e3:.1f} | {d['tokens_per_second']:.2f} "
          f"| {d['weight_bytes_per_token'] / 2**20:.1f} | {ceiling(d)} | {d['ceiling_fraction']:.3f} | {top(d, s)} |")
p = j["prefill"]
if p:
    s = p["seconds_per_step"]
    print(f"| {preset} | prefill {p['rows']} rows | {s * 1e3:.1f} | {p['tokens_per_second']:.2f} "
          f"| {p['weight_bytes_per_step'] / 2**20:.1f} | {ceiling(p)} | {p['ceiling_fraction']:.3f} | {top(p, s)} |")
PY
