#!/bin/sh
# Speculative decoding by prompt lookup (pccx-run --draft ngram) against
# plain decoding, side by side in one run, on this machine's CPU (the
# simulator device): the trained demo model (tools/demo-model) on a text
# that repeats a passage and on a free continuation, and the E2B-shaped
# bundle of bench/batch-decode.sh on a prompt that repeats a sequence.
# Greedy: both columns generate the same tokens (checked).
#
# Usage: bench/speculative.sh BUILD_DIR WORK_DIR [DRAFT_TOKENS]
set -eu
BUILD="$1"
BIN="$BUILD/bin"
WORK="$2"
DRAFT="${3:-3}"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
DEMO="$WORK/demo-batch8.pccx"
[ -f "$DEMO" ] || "$BIN/pccx-compile" "$HERE/../tools/demo-model" \
  --max-seq-len 512 --decode-batch 8 --quiet -o "$DEMO"
E2B="$WORK/e2b-10-batch8.pccx"
[ -f "$E2B" ] || "$HERE/batch-decode.sh" "$BUILD" "$WORK" 10 --batch 1 \
  --steps 1 >/dev/null
PASSAGE=$(head -n 1 "$HERE/../tools/demo-model/heldout.txt" | cut -c1-600)
REPEAT=$(python3 -c "print(','.join(str(x) for x in [2] + list(range(1000, 1040)) * 2))")

echo "| bundle, text | tokens | decode steps | tokens/step | accepted | plain tok/s | draft tok/s | speed-up |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row() { # NAME BUNDLE INPUT-FLAG INPUT TOKENS
  plain=$("$BIN/pccx-run" "$2" "$3" "$4" --max-new-tokens "$5" --stop-tokens "" --json 2>/dev/null)
  draft=$("$BIN/pccx-run" "$2" "$3" "$4" --max-new-tokens "$5" --stop-tokens "" --json \
    --draft ngram --draft-tokens "$DRAFT" 2>/dev/null)
  python3 - "$1" "$plain" "$draft" <<'PY'
import json, sys
name, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
if a["generated_tokens"] != b["generated_tokens"]:
    sys.exit("speculative.sh: %s: the drafted run generated other tokens" % name)
d, ta, tb = b["draft"], a["timing"], b["timing"]
print("| %s | %d | %d | %.2f | %d of %d (%.0f%%) | %.1f | %.1f | %.2fx |" % (
    name, d["decode_steps"] + d["accepted"], d["decode_steps"], d["tokens_per_step"],
    d["accepted"], d["drafted"], 100 * d["acceptance_rate"],
    ta["decode_tokens_per_second"], tb["decode_tokens_per_second"],
    ta["decode_seconds"] / tb["decode_seconds"]))
PY
}
row "demo, a passage twice" "$DEMO" --prompt "$PASSAGE $PASSAGE" 120
row "demo, free continuation" "$DEMO" --prompt "And it came to pass" 120
row "E2B-shaped (10 layers), a repeated sequence" "$E2B" --tokens "$REPEAT" 40
