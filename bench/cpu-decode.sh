#!/bin/sh
# Decode on this machine's CPU (the simulator device, the board's path:
# docs/kv260.md) against its own memcpy rate, 1 thread and every thread, on
# an E2B-shaped bundle: the released E2B text decoder's sizes (hidden 2048,
# MLP 8192, vocabulary 262 400, per-layer inputs) with its first LAYERS
# layers (default 10, the last two KV-shared), so a token streams about
# 0.6 GB of weights and the checkpoint takes minutes, not an hour, to make.
# Generates the checkpoint and the bundle into WORK_DIR once.
#
# Usage: bench/cpu-decode.sh BUILD_DIR WORK_DIR [LAYERS] [bench-cpu-decode options]
set -eu
BIN="$1/bin"
WORK="$2"
LAYERS="${3:-10}"
[ $# -ge 3 ] && shift 3 || shift $#
mkdir -p "$WORK"
CKPT="$WORK/e2b-$LAYERS"
BUNDLE="$WORK/e2b-$LAYERS.pccx"
if [ ! -f "$BUNDLE" ]; then
  if [ ! -f "$CKPT/config.json" ]; then
    "$BIN/pccx-make-checkpoint" --preset e2b --print-config -o "$CKPT" |
      python3 -c '
import json, sys
c = json.load(sys.stdin)
n = int(sys.argv[1])
c["num_hidden_layers"] = n
for key in ("intermediate_size", "layer_types", "activation_sparsity_pattern"):
    c[key] = c[key][:n]
c["num_kv_shared_layers"] = min(c["num_kv_shared_layers"], max(0, n - 5))
json.dump(c, open(sys.argv[2], "w"), indent=1)
' "$LAYERS" "$WORK/e2b-$LAYERS.json"
    echo "generating $CKPT ..." >&2
    "$BIN/pccx-make-checkpoint" --config "$WORK/e2b-$LAYERS.json" -o "$CKPT" --overwrite >&2
  fi
  echo "compiling $BUNDLE ..." >&2
  "$BIN/pccx-compile" "$CKPT" --max-seq-len 2048 --quiet -o "$BUNDLE" >&2
fi
"$BIN/bench-cpu-decode" "$BUNDLE" "$@"
