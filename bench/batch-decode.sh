#!/bin/sh
# Aggregate decode speed with 1, 2, 4 and 8 sequences per pass over the
# weights, on this machine's CPU (the simulator device), on the E2B-shaped
# bundle of bench/cpu-decode.sh (its first LAYERS layers, default 10)
# compiled with --decode-batch 8. Makes the checkpoint and the bundle into
# WORK_DIR once.
#
# Usage: bench/batch-decode.sh BUILD_DIR WORK_DIR [LAYERS] [bench-batch-decode options]
set -eu
BUILD="$1"
BIN="$BUILD/bin"
WORK="$2"
LAYERS="${3:-10}"
[ $# -ge 3 ] && shift 3 || shift $#
HERE=$(dirname "$0")
BUNDLE="$WORK/e2b-$LAYERS-batch8.pccx"
if [ ! -f "$BUNDLE" ]; then
  # The checkpoint of bench/cpu-decode.sh (it makes it when missing).
  "$HERE/cpu-decode.sh" "$BUILD" "$WORK" "$LAYERS" --tokens 1 --threads 1 \
    --memcpy-mib 1 >/dev/null
  echo "compiling $BUNDLE ..." >&2
  "$BIN/pccx-compile" "$WORK/e2b-$LAYERS" --max-seq-len 2048 --decode-batch 8 \
    --quiet -o "$BUNDLE" >&2
fi
"$BIN/bench-batch-decode" "$BUNDLE" "$@"
