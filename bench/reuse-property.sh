#!/bin/sh
# The reuse property's long mode (docs/serving.md, "What a request reuses"):
# many more seeded programs than make test runs, through the session, the
# batch scheduler and speculative steps (test/unit/app/ReuseTests.cpp), and
# many more request sequences through the server on every serving path
# (test/tools/pccx-serve/Inputs/reuse_sequences.py), each checked against
# fresh runs bit for bit. Prints what it checked; exits 1 on a difference,
# with the failing seed's reproducer above.
#
# Usage: bench/reuse-property.sh BUILD_DIR WORK_DIR [PROGRAMS] [SEQUENCES]
#   PROGRAMS   programs per bundle and suite (default 400; make test: 20)
#   SEQUENCES  server sequences of 40 requests per path (default 10)
set -eu
BUILD="$1"
WORK="$2"
PROGRAMS="${3:-400}"
SEQUENCES="${4:-10}"
HERE=$(cd "$(dirname "$0")" && pwd)
PATH="$(cd "$BUILD/bin" && pwd):$PATH"
export PATH
mkdir -p "$WORK"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

PCCX_REUSE_PROGRAMS=$PROGRAMS "$BUILD/unittests/PccxAppTests" \
  --gtest_filter='Bundles/Reuse.*:Reuse.*' | grep -E 'programs|requests|FAILED|PASSED|seed|reproduce'

sh "$HERE/../test/tools/pccx-run/Inputs/make_chat_checkpoint.sh" "$WORK/chat.ckpt"
pccx-compile "$WORK/chat.ckpt" --max-seq-len 128 --prefill-rows 4 \
  --decode-batch 4 -o "$WORK/chat.pccx" > /dev/null
total=0
for options in "" "--parallel 4" "--draft ngram" "--context-shift" \
    "--parallel 4 --context-shift"; do
  seed=1
  while [ "$seed" -le "$SEQUENCES" ]; do
    # Seeds of the test suite's own runs are left to it.
    python3 "$HERE/../test/tools/pccx-serve/Inputs/reuse_sequences.py" \
      "$WORK/chat.pccx" --seed $((seed + 1000)) --requests 40 $options \
      > "$WORK/sequence.log" || { tail -6 "$WORK/sequence.log"; exit 1; }
    total=$((total + $(tail -1 "$WORK/sequence.log" | cut -d' ' -f1)))
    seed=$((seed + 1))
  done
  echo "server ${options:-(one slot)}: $SEQUENCES sequences, every reply a fresh server's"
done
echo "server: $total requests compared with fresh servers"
