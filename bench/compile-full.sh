#!/bin/sh
# Compiles a full-size generated checkpoint (e2b or e4b) and measures what
# the issue bounds: wall time, peak resident memory against the checkpoint
# size (weights must stream, never sit in memory), bundle size, and one
# decode step on the simulator against the bytes it streams; then the
# agreement of both simulator numerics with the float reference on the same
# weights (--compare-reference).
#
# Usage: bench/compile-full.sh BUILD_DIR PRESET WORK_DIR
#   (PRESET e2b or e4b; WORK_DIR needs ~3x the checkpoint size free)
set -eu
BIN="$1/bin"
PRESET="$2"
WORK="$3"
CKPT="$WORK/$PRESET"
mkdir -p "$WORK"

if [ ! -f "$CKPT/config.json" ]; then
  echo "generating $PRESET into $CKPT ..."
  /usr/bin/time -f "%e %M" -o "$WORK/gen.time" \
    "$BIN/pccx-make-checkpoint" --preset "$PRESET" -o "$CKPT"
  echo "generated in $(cut -d' ' -f1 "$WORK/gen.time") s"
fi
CKPT_BYTES=$(du -sb "$CKPT" | cut -f1)

/usr/bin/time -f "%e %M" -o "$WORK/compile.time" \
  "$BIN/pccx-compile" "$CKPT" --max-seq-len 2048 -o "$WORK/$PRESET.pccx"
read -r SECONDS_C RSS_KB < "$WORK/compile.time"
BUNDLE_BYTES=$(stat -c %s "$WORK/$PRESET.pccx")

/usr/bin/time -f "%e %M" -o "$WORK/run.time" \
  "$BIN/pccx-run" "$WORK/$PRESET.pccx" --tokens 2,818,5088 --max-new-tokens 2 \
  --stop-tokens "" --json > "$WORK/run.json"
read -r SECONDS_R RSS_R < "$WORK/run.time"

python3 - "$PRESET" "$CKPT_BYTES" "$BUNDLE_BYTES" "$SECONDS_C" "$RSS_KB" \
  "$SECONDS_R" "$RSS_R" "$WORK/run.json" <<'PY'
import json, sys
preset, ckpt, bundle, sec, rss, rsec, rrss, run = sys.argv[1:]
ckpt, bundle, sec, rss = int(ckpt), int(bundle), float(sec), int(rss) * 1024
r = json.load(open(run))
steps = r["stats"]["steps"]
wbytes = r["stats"]["weight_bytes"]
print(f"{preset}: checkpoint {ckpt/2**30:.2f} GiB, bundle {bundle/2**30:.2f} GiB "
      f"(bundle/checkpoint {bundle/ckpt:.3f})")
print(f"compile: {sec:.1f} s wall, {ckpt/2**20/sec:.0f} MiB/s of checkpoint, "
      f"peak RSS {rss/2**20:.0f} MiB (peak RSS/checkpoint {rss/ckpt:.4f})")
print(f"simulator: {steps} steps in {float(rsec):.1f} s, {wbytes/2**30:.2f} GiB of "
      f"weight records streamed, decode {r['timing']['decode_tokens_per_second']:.3f} tokens/s, "
      f"peak RSS {int(rrss)/2**10:.0f} MiB")
PY

for NUMERICS in reference hardware; do
  "$BIN/pccx-run" "$WORK/$PRESET.pccx" --tokens 2,818,5088,1234,77 \
    --max-new-tokens 2 --stop-tokens "" --numerics "$NUMERICS" \
    --compare-reference "$CKPT" | tail -n 2
done
