#!/bin/sh
# The board's CPU path by static analysis (an estimate, not a measurement):
# the GEMV inner loops of bench/a53-loops.cpp compiled for aarch64 with
# Debian's cross GCC (-O3, -mcpu of the core) and run through llvm-mca: the
# Hardware-numerics float kernel and the Integer-numerics kernel on the
# KV260's Cortex-A53, and the integer kernel with sdot on a Cortex-A55 (an
# ARMv8.2 core, for scale). Prints cycles per 32 INT4 weights (16 bytes),
# GB/s of weights per core at 1.333 GHz, the four cores' GB/s (below the
# board's DDR4 peak of 19.2 GB/s), and decode tokens/s of the full-size
# bundles from the weight bytes a token streams (docs/kv260.md).
#
# Usage: bench/a53-estimate.sh [WORK_DIR]   (needs g++-aarch64-linux-gnu
# and llvm-19: crossbuild-essential-arm64, llvm-19)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK"
CXX=aarch64-linux-gnu-g++
for tool in "$CXX" llvm-mca-19; do
  command -v "$tool" > /dev/null || { echo "a53-estimate: $tool is missing (make aarch64-deps; apt-get install llvm-19)" >&2; exit 2; }
done
GHZ=1.333
E2B_GB=1.26
E4B_GB=2.31

# cycles per 32 weights of one kernel: NAME CPU GROUPS_PER_ITERATION DEFINES...
run() {
  name=$1 cpu=$2 rows=$3
  shift 3
  $CXX -std=c++17 -O3 -mcpu="$cpu" -ffp-contract=off -I"$HERE/.." "$@" \
    -S "$HERE/a53-loops.cpp" -o "$WORK/$name.s"
  cycles=$(llvm-mca-19 -mtriple=aarch64 -mcpu="$cpu" -iterations=1000 \
    "$WORK/$name.s" | sed -n 's/^Total Cycles: *//p' | head -1)
  python3 - "$name" "$cpu" "$rows" "$cycles" "$GHZ" "$E2B_GB" "$E4B_GB" <<'PY'
import sys
name, cpu, rows, cycles, ghz, e2b, e4b = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
per32 = cycles / 1000 / rows
core = 16 / per32 * ghz  # GB/s: 16 bytes per 32 INT4 weights
four = 4 * core
print("| %s | %s | %.1f | %.2f | %.2f | %.2f | %.2f |" % (name, cpu, per32, core, four, four / e2b, four / e4b))
PY
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (static analysis: the load does not matter)"
echo "| kernel | core | cycles / 32 weights | GB/s per core | GB/s, 4 cores | E2B tok/s | E4B tok/s |"
echo "|---|---|---:|---:|---:|---:|---:|"
run hardware-numerics-float cortex-a53 1 -DPCCX_LOOP_FLOAT
run integer-numerics-neon cortex-a53 8
run integer-numerics-sdot cortex-a55 8 -DPCCX_LOOP_DOT
