#!/bin/sh
# Decode on this machine's CPU side by side with llama.cpp, on the same
# checkpoint: the E2B-shaped random-weight checkpoint of cpu-decode.sh
# (pccx-make-checkpoint, the released E2B text decoder's sizes, its first
# LAYERS layers), compiled with default options here and converted to GGUF
# Q4_0 for llama.cpp (the LM head in Q4_0 too: `--mix pure`, the closest to
# the bundle's INT4 head). Both decode the same 4-token prompt, one untimed
# warm-up step, then TOKENS timed steps of one token, greedy; the two
# programs run alternately, one process per measurement, and their order
# flips every round, so the machine's load hits both alike. Prints each
# measurement with the load average, then per layer count and thread count
# the medians and the paired ratio (this project / llama.cpp, round by
# round: median, min, max).
#
# llama.cpp is the prebuilt CPU build in npm's node-llama-cpp; PEER_DIR
# holds the kit that installs and drives it: setup.sh (installs
# node-llama-cpp and unpacks llama.cpp's gguf-py), hf_to_gguf_gemma3n.py
# (the converter) and llama-decode.mjs (the timing driver). Without node
# and npm, or without the kit, the bench says so and skips (exit 0).
#
# Usage: bench/llama-side-by-side.sh BUILD_DIR WORK_DIR PEER_DIR
#          [--layers 10,30] [--threads 1,N] [--rounds R] [--tokens T]
#          [--numerics integer[,hardware]]
# Defaults: layers 10 and 30, threads 1 and every core, 5 rounds, 32 tokens,
# this project's default numerics (integer).
set -eu
[ $# -ge 3 ] || { sed -n '21,25p' "$0" >&2; exit 2; }
BUILD="$1"; WORK="$2"; PEER="$3"; shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
LAYERS=10,30; THREADS="1,$(nproc)"; ROUNDS=5; NTOK=32; NUMERICS=integer
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) LAYERS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --tokens) NTOK="$2"; shift 2 ;;
    --numerics) NUMERICS="$2"; shift 2 ;;
    *) echo "llama-side-by-side: unknown option $1" >&2; exit 2 ;;
  esac
done
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "llama-side-by-side: skipped: node and npm are not installed (apt-get install nodejs npm)"
  exit 0
fi
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import numpy' 2> /dev/null; then
  echo "llama-side-by-side: skipped: the GGUF converter needs numpy ($PYTHON; apt-get install python3-numpy, or set PYTHON)"
  exit 0
fi
for f in setup.sh hf_to_gguf_gemma3n.py llama-decode.mjs; do
  if [ ! -f "$PEER/$f" ]; then
    echo "llama-side-by-side: skipped: $PEER has no $f (PEER_DIR is the llama.cpp peer kit)"
    exit 0
  fi
done
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# node_modules=... gguf_py=... libggml=...
eval "$(sh "$PEER/setup.sh" "$WORK/llama" 2> "$WORK/llama-setup.log" | tail -1)"
DRIVER="$WORK/llama/llama-decode.mjs"
LOG="$WORK/side-by-side.log"
: > "$LOG"

for layers in $(echo "$LAYERS" | tr ',' ' '); do
  # The checkpoint and bundle of cpu-decode.sh (made when missing).
  "$HERE/cpu-decode.sh" "$BUILD" "$WORK" "$layers" --tokens 1 --threads 1 \
    --memcpy-mib 1 > /dev/null
  gguf="$WORK/e2b-$layers-q4_0.gguf"
  if [ ! -f "$gguf" ]; then
    echo "converting $WORK/e2b-$layers to $gguf ..." >&2
    "$PYTHON" "$PEER/hf_to_gguf_gemma3n.py" "$WORK/e2b-$layers" "$gguf.tmp" \
      --gguf-py "$gguf_py" --libggml "$libggml" --mix pure > /dev/null
    mv "$gguf.tmp" "$gguf"
  fi
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    for t in $(echo "$THREADS" | tr ',' ' '); do
      pccx() {
        for n in $(echo "$NUMERICS" | tr ',' ' '); do
          rate=$("$BUILD/bin/bench-cpu-decode" "$WORK/e2b-$layers.pccx" \
            --tokens "$NTOK" --threads "$t" --memcpy-mib 1 --numerics "$n" |
            awk -F'|' '/^\| [0-9]/ { gsub(/ /, "", $4); print $4 }')
          echo "layers=$layers threads=$t round=$r program=pccx-$n tok_s=$rate load=$(cut -d' ' -f1 /proc/loadavg)" >> "$LOG"
        done
      }
      llama() {
        rate=$(node "$DRIVER" bench "$gguf" "$t" $((NTOK + 2)) 2,100,200,300 1 2> /dev/null |
          tail -1 | python3 -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["runs"][0]["decode_tok_s"])')
        echo "layers=$layers threads=$t round=$r program=llama.cpp tok_s=$rate load=$(cut -d' ' -f1 /proc/loadavg)" >> "$LOG"
      }
      if [ $((r % 2)) -eq 1 ]; then llama; pccx; else pccx; llama; fi
    done
    r=$((r + 1))
  done
done
cat "$LOG"
python3 - "$LOG" <<'EOF'
import collections, statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1])]
rate = {}
loads = []
for r in rows:
    rate[(int(r["layers"]), int(r["threads"]), int(r["round"]), r["program"])] = float(r["tok_s"])
    loads.append(float(r["load"]))
programs = sorted({r["program"] for r in rows if r["program"] != "llama.cpp"})
print()
print("load average during the runs: %.2f to %.2f (median %.2f)"
      % (min(loads), max(loads), statistics.median(loads)))
print("| layers | threads | program | tok/s (median) | llama.cpp tok/s (median) | ratio, paired: median (min-max) |")
print("|---:|---:|---|---:|---:|---:|")
for layers, threads in sorted({(k[0], k[1]) for k in rate}):
    rounds = sorted({k[2] for k in rate if k[:2] == (layers, threads)})
    llama = [rate[(layers, threads, r, "llama.cpp")] for r in rounds]
    for p in programs:
        ours = [rate[(layers, threads, r, p)] for r in rounds]
        ratios = [a / b for a, b in zip(ours, llama)]
        print("| %d | %d | %s | %.2f | %.2f | %.2fx (%.2f-%.2f) |"
              % (layers, threads, p, statistics.median(ours), statistics.median(llama),
                 statistics.median(ratios), min(ratios), max(ratios)))
EOF
