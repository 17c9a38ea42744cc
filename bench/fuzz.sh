#!/usr/bin/env bash
# Runs every libFuzzer target for a fixed budget and prints, per target,
# the executions, the corpus it reached and the findings.
#
#   bench/fuzz.sh [SECONDS_PER_TARGET] [FUZZ_BUILD_DIR]
#
# FUZZ_JOBS targets run at once (default: the number of cores).
#
# SECONDS_PER_TARGET 0 only replays each seed corpus (test/fuzz/corpus/<t>).
# The build dir is configured with clang (Makefile: make fuzz-build).
# Findings (crash-*, leak-*, timeout-*, oom-*) are kept in $FUZZ_OUT
# (default: FUZZ_BUILD_DIR/fuzz-out); the exit status is 1 when there is
# any. Corpora grow in FUZZ_OUT, never in the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${2:-build-fuzz}
out=${FUZZ_OUT:-$build/fuzz-out}
targets=${FUZZ_TARGETS:-"safetensors shard-index config isa asm bundle ir http tokenizer json-schema"}
mkdir -p "$out"
status=0

# fuzz-http's sequence inputs ('=') run a real model: a chat checkpoint
# compiled with small sliding rings by this checkout's tools (the release
# tree, PCCX_TOOLS_DIR), whose oracle is a fresh server.
case " $targets " in
*" http "*)
  tools=${PCCX_TOOLS_DIR:-build/bin}
  if [ -x "$tools/pccx-compile" ] && [ -x "$tools/pccx-make-checkpoint" ]; then
    model=$out/http-model
    PATH="$(cd "$tools" && pwd):$PATH" sh test/tools/pccx-run/Inputs/make_chat_checkpoint.sh "$model.ckpt"
    "$tools/pccx-compile" "$model.ckpt" --max-seq-len 64 --prefill-rows 4 \
      --decode-batch 4 -o "$model.pccx" > /dev/null
    export PCCX_FUZZ_HTTP_BUNDLE=$model.pccx
  else
    echo "note: no $tools/pccx-compile (make build): fuzz-http skips its sequence inputs" >&2
  fi
  ;;
esac
# One target's run; its row and verdict are printed afterwards, in order.
fuzz_one() {
  local t=$1 rc bin=$build/bin/fuzz-$1 corpus=$out/corpus-$1 dict=() args=()
  [ "$t" = bundle ] && dict=(-dict=test/fuzz/manifest.dict)
  [ "$t" = ir ] && dict=(-dict=test/fuzz/ir.dict)
  if [ "$seconds" = 0 ]; then
    args=(-runs=0 test/fuzz/corpus/$t)
  else
    args=(-max_total_time="$seconds" "$corpus")
  fi
  "$bin" "${args[@]}" "${dict[@]}" -print_final_stats=1 -timeout=20 \
    -rss_limit_mb=2560 -malloc_limit_mb=2560 \
    -artifact_prefix="$out/findings-$t/" > "$out/$t.log" 2>&1 && rc=0 || rc=$?
  echo "$rc" > "$out/$t.rc"
}

for t in $targets; do
  [ -x "$build/bin/fuzz-$t" ] || { echo "missing $build/bin/fuzz-$t (make fuzz-build)" >&2; exit 2; }
  mkdir -p "$out/corpus-$t" "$out/findings-$t"
  cp -n test/fuzz/corpus/$t/* "$out/corpus-$t/" 2>/dev/null || true
  rm -f "$out/$t.rc"
done

# FUZZ_JOBS targets at once (default: one per core); each is one process.
jobs=${FUZZ_JOBS:-$(nproc)}
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

printf '%-12s %8s %12s %10s %8s %s\n' target seconds executions exec/s corpus findings
for t in $targets; do
  log=$out/$t.log
  rc=$(cat "$out/$t.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(ls "$out/corpus-$t" | wc -l)
  found=$(ls "$out/findings-$t" | wc -l)
  printf '%-12s %8s %12s %10s %8s %s\n' "$t" "$seconds" "${execs:-?}" \
    "${rate:-?}" "$size" "$found"
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    echo "  fuzz-$t: exit $rc; see $log and $out/findings-$t" >&2
    status=1
  fi
done
exit $status
