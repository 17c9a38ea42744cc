#!/bin/sh
# Choosing a MatFormer slice: compiles every published slice of an
# E4B-shaped checkpoint (pccx-compile --matformer-slice, each bundle deleted
# once measured) and prints one table row per slice: layers, effective
# parameters and MMLU as published, the bundle's size and whether it fits
# the KV260's 4 GB next to Linux, the weight bytes streamed per decode
# token, the modelled decode tok/s on the v002 and kv260-as-built machines
# (pccx-prof), and the board CPU's integer-path estimate (pccx-prof's
# "today" figure). What must stay in memory while decoding is the weights
# section, the host tensors and the KV records (the embedding tables are
# read a row per token from the mapped file): it fits the 4 GB board when
# it leaves at least 1 GiB to Linux and the mapped tables (docs/kv260.md,
# "Memory budget").
#
# Usage: bench/matformer-slices.sh BUILD_DIR CKPT_DIR WORK_DIR [--max-seq-len N]
#   CKPT_DIR: an E4B-shaped checkpoint (pccx-make-checkpoint --preset e4b
#   writes the full-size one, ~13 GB); WORK_DIR holds one bundle at a time.
set -eu
BIN="$1/bin"
CKPT="$2"
WORK="$3"
shift 3
CTX=2048
if [ "${1:-}" = "--max-seq-len" ]; then CTX="$2"; fi
mkdir -p "$WORK"
# Resident bytes that leave 1 GiB of the 4 GiB board to Linux.
FIT_BYTES=$((3 * 1024 * 1024 * 1024))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) on $(nproc) cores; checkpoint $CKPT, --max-seq-len $CTX"
echo "| slice | layers | params | MMLU | bundle | resident | fits 4 GB | weights/token | v002 tok/s | as built tok/s | board CPU tok/s | compile |"
echo "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"
"$BIN/pccx-compile" --list-matformer-slices | tail -n +3 | while read -r NAME REST; do
  B="$WORK/slice.pccx"
  start=$(date +%s)
  "$BIN/pccx-compile" "$CKPT" --quiet --max-seq-len "$CTX" --matformer-slice "$NAME" -o "$B"
  secs=$(( $(date +%s) - start ))
  "$BIN/pccx-prof" "$B" --json > "$WORK/v002.json"
  "$BIN/pccx-prof" "$B" --json --machine kv260-as-built > "$WORK/built.json"
  python3 - "$NAME" "$B" "$WORK/v002.json" "$WORK/built.json" "$FIT_BYTES" "$secs" "$BIN" <<'PY'
import json, os, subprocess, sys
name, bundle, v002, built, fit, secs, bindir = sys.argv[1:]
listing = subprocess.run([os.path.join(bindir, "pccx-compile"), "--list-matformer-slices"],
                         capture_output=True, text=True).stdout.splitlines()[2:]
row = next(l for l in listing if l.split()[0] == name)
cols = row.split()
params, mmlu = cols[-4], cols[-3]
layers = cols[-5]
a, b = json.load(open(v002)), json.load(open(built))
da, db = a["decode"][0], b["decode"][0]
size = os.path.getsize(bundle)
info = subprocess.run([os.path.join(bindir, "pccx-objdump"), "--info", bundle],
                      capture_output=True, text=True).stdout
def info_bytes(label, pattern=r"(\d+) bytes"):
    import re
    for line in info.splitlines():
        if line.strip().startswith(label):
            m = re.search(pattern, line)
            return int(m.group(1)) if m else 0
    return 0
resident = (info_bytes("NPU weights") + info_bytes("host tensors") +
            info_bytes("KV caches", r"device memory, (\d+) bytes"))
print(f"| {name} | {layers} | {params} | {mmlu} | {size / 2**30:.2f} GiB | "
      f"{resident / 2**30:.2f} GiB | {'yes' if resident <= int(fit) else 'no'} | "
      f"{da['weight_bytes_per_token'] / 2**20:.1f} MiB | "
      f"{da['tokens_per_second']:.2f} | {db['tokens_per_second']:.2f} | "
      f"{a['today']['board_cpu_tokens_per_second_estimate']:.2f} | {secs} s |", flush=True)
PY
  rm -f "$B"
done
