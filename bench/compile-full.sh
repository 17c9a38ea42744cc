#!/bin/sh
# Compiles a full-size generated checkpoint (e2b or e4b) and measures what
# the issue bounds: wall time against the time to read the checkpoint once
# (measured in the same run), peak resident memory against the checkpoint
# size (weights must stream, never sit in memory), bundle size, and one
# decode step on the simulator against the bytes it streams; then the
# agreement of both simulator numerics with the float reference on the same
# weights (--compare-reference).
#
# Usage: bench/compile-full.sh BUILD_DIR PRESET WORK_DIR [--compile-only]
#   (PRESET e2b or e4b; WORK_DIR needs ~3x the checkpoint size free;
#   --compile-only stops after the compile figures)
set -eu
BIN="$1/bin"
PRESET="$2"
WORK="$3"
COMPILE_ONLY="${4:-}"
CKPT="$WORK/$PRESET"
mkdir -p "$WORK"

if [ ! -f "$CKPT/config.json" ]; then
  echo "generating $PRESET into $CKPT ..."
  /usr/bin/time -f "%e %M" -o "$WORK/gen.time" \
    "$BIN/pccx-make-checkpoint" --preset "$PRESET" -o "$CKPT" --overwrite
  echo "generated in $(cut -d' ' -f1 "$WORK/gen.time") s"
fi
CKPT_BYTES=$(du -sb "$CKPT" | cut -f1)

# The baseline: every file of the checkpoint read once, in order, with
# plain read() calls into one buffer. "cold" first asks the kernel to drop
# the files' cached pages (posix_fadvise DONTNEED), so they come from the
# disk; "warm" reads them again from the page cache. The compile follows,
# with the checkpoint as the warm read left it.
python3 - "$CKPT" > "$WORK/read.time" <<'PY'
import os, sys, time
root = sys.argv[1]
files = sorted(p for p in (os.path.join(root, f) for f in os.listdir(root))
               if os.path.isfile(p))
def read_all(drop):
    if drop:
        for path in files:
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    buf = bytearray(8 << 20)
    view = memoryview(buf)
    start = time.monotonic()
    total = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(view)
                if not n:
                    break
                total += n
    return time.monotonic() - start, total
cold, total = read_all(True)
warm, _ = read_all(False)
print(f"{cold:.3f} {warm:.3f} {total}")
PY
read -r READ_COLD READ_WARM READ_BYTES < "$WORK/read.time"

/usr/bin/time -f "%e %M" -o "$WORK/compile.time" \
  "$BIN/pccx-compile" "$CKPT" --max-seq-len 2048 -o "$WORK/$PRESET.pccx"
read -r SECONDS_C RSS_KB < "$WORK/compile.time"
BUNDLE_BYTES=$(stat -c %s "$WORK/$PRESET.pccx")

python3 - "$PRESET" "$CKPT_BYTES" "$BUNDLE_BYTES" "$SECONDS_C" "$RSS_KB" \
  "$READ_COLD" "$READ_WARM" "$READ_BYTES" <<'PY'
import sys
preset, ckpt, bundle, sec, rss, cold, warm, rbytes = sys.argv[1:]
ckpt, bundle, sec, rss = int(ckpt), int(bundle), float(sec), int(rss) * 1024
cold, warm, rbytes = float(cold), float(warm), int(rbytes)
print(f"{preset}: checkpoint {ckpt/2**30:.2f} GiB, bundle {bundle/2**30:.2f} GiB "
      f"(bundle/checkpoint {bundle/ckpt:.3f})")
print(f"read once: cold {cold:.1f} s ({rbytes/2**30/cold:.2f} GiB/s), "
      f"warm {warm:.1f} s ({rbytes/2**30/warm:.2f} GiB/s)")
print(f"compile: {sec:.1f} s wall, {ckpt/2**20/sec:.0f} MiB/s of checkpoint; "
      f"compile/read {sec/cold:.2f} (cold) {sec/warm:.2f} (warm) [goal <= 3]")
print(f"compile peak RSS {rss/2**30:.3f} GiB [goal <= 1] "
      f"(peak RSS/checkpoint {rss/ckpt:.4f})")
PY
[ "$COMPILE_ONLY" = "--compile-only" ] && exit 0

/usr/bin/time -f "%e %M" -o "$WORK/run.time" \
  "$BIN/pccx-run" "$WORK/$PRESET.pccx" --tokens 2,818,5088 --max-new-tokens 2 \
  --stop-tokens "" --json > "$WORK/run.json"
read -r SECONDS_R RSS_R < "$WORK/run.time"

python3 - "$SECONDS_R" "$RSS_R" "$WORK/run.json" <<'PY'
import json, sys
rsec, rrss, run = sys.argv[1:]
r = json.load(open(run))
steps = r["stats"]["steps"]
wbytes = r["stats"]["weight_bytes"]
print(f"simulator: {steps} steps in {float(rsec):.1f} s, {wbytes/2**30:.2f} GiB of "
      f"weight records streamed, decode {r['timing']['decode_tokens_per_second']:.3f} tokens/s, "
      f"peak RSS {int(rrss)/2**10:.0f} MiB")
PY

for NUMERICS in reference hardware; do
  "$BIN/pccx-run" "$WORK/$PRESET.pccx" --tokens 2,818,5088,1234,77 \
    --max-new-tokens 2 --stop-tokens "" --numerics "$NUMERICS" \
    --compare-reference "$CKPT" | tail -n 2
done
