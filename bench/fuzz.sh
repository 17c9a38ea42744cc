#!/usr/bin/env bash
# Runs every libFuzzer target for a fixed budget and prints, per target,
# the executions, the corpus it reached and the findings.
#
#   bench/fuzz.sh [SECONDS_PER_TARGET] [FUZZ_BUILD_DIR]
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
printf '%-12s %8s %12s %10s %8s %s\n' target seconds executions exec/s corpus findings

for t in $targets; do
  bin=$build/bin/fuzz-$t
  [ -x "$bin" ] || { echo "missing $bin (make fuzz-build)" >&2; exit 2; }
  corpus=$out/corpus-$t
  mkdir -p "$corpus" "$out/findings-$t"
  cp -n test/fuzz/corpus/$t/* "$corpus/" 2>/dev/null || true
  dict=()
  [ "$t" = bundle ] && dict=(-dict=test/fuzz/manifest.dict)
  [ "$t" = ir ] && dict=(-dict=test/fuzz/ir.dict)
  log=$out/$t.log
  if [ "$seconds" = 0 ]; then
    args=(-runs=0 test/fuzz/corpus/$t)
  else
    args=(-max_total_time="$seconds" "$corpus")
  fi
  set +e
  "$bin" "${args[@]}" "${dict[@]}" -print_final_stats=1 -timeout=20 \
    -rss_limit_mb=2560 -malloc_limit_mb=2560 \
    -artifact_prefix="$out/findings-$t/" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(ls "$corpus" | wc -l)
  found=$(ls "$out/findings-$t" | wc -l)
  printf '%-12s %8s %12s %10s %8s %s\n' "$t" "$seconds" "${execs:-?}" \
    "${rate:-?}" "$size" "$found"
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
    echo "  fuzz-$t: exit $rc; see $log and $out/findings-$t" >&2
    status=1
  fi
done
exit $status
