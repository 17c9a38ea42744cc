#!/bin/sh
# Quality of each quantization option on trained weights: perplexity, its
# change against the float reference on the original bf16 weights, mean KL
# divergence and top-1 agreement, on the demo model's held-out text
# (docs/demo-model.md), printed as one table.
#
# Usage: bench/quality.sh BUILD_DIR [WORK_DIR] [MAX_WINDOWS] [ONLY]
#   WORK_DIR  bundles and JSON results (default: bench-quality-out); results
#             already there are reused, delete it to measure again
#   MAX_WINDOWS  score only the first N windows (default: all 160; 0: all)
#   ONLY      an extended regular expression: only the configurations whose
#             "name|numerics" matches (default: all)
set -euf # no globbing: the options hold regular expressions
BIN="$1/bin"
WORK="${2:-bench-quality-out}"
MAXW="${3:-0}"
ONLY="${4:-.}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$SRC/tools/demo-model"
TEXT="$MODEL/heldout.txt"
mkdir -p "$WORK"

# name | compile options | pccx-run numerics
CONFIGS="int4-absmax|--int4-scales absmax|reference
int4-search|--int4-scales search|reference
int4-absmax|--int4-scales absmax|hardware
int4-search|--int4-scales search|hardware
int4-search-host|--int4-scales search --attention host|hardware
int4-search-host-kv8|--int4-scales search --attention host --kv-dtype int8|hardware
int4-search-emb8|--int4-scales search --int8-weights embed_tokens\\.weight|hardware
int4-search-budget10|--int4-scales search --int8-budget 10% --calibration $MODEL/calibration.txt|hardware
int4-search-gptq-datafree|--int4-scales search --int4-rounding gptq|hardware
int4-search-gptq|--int4-scales search --int4-rounding gptq --calibration $MODEL/calibration.txt|reference
int4-search-gptq|--int4-scales search --int4-rounding gptq --calibration $MODEL/calibration.txt|hardware
int4-absmax-gptq|--int4-scales absmax --int4-rounding gptq --calibration $MODEL/calibration.txt|hardware
int8|--int8-weights .*|hardware
int4-search|--int4-scales search|integer
int8|--int8-weights .*|integer"
CONFIGS=$(echo "$CONFIGS" | while IFS='|' read -r name options numerics; do
  if echo "$name|$numerics" | grep -Eq -- "$ONLY"; then
    echo "$name|$options|$numerics"
  fi
done)
[ -n "$CONFIGS" ] || { echo "quality.sh: no configuration matches '$ONLY'" >&2; exit 2; }

echo "$CONFIGS" | while IFS='|' read -r name options numerics; do
  bundle="$WORK/$name.pccx"
  if [ ! -f "$bundle" ]; then
    start=$(date +%s%N)
    # shellcheck disable=SC2086 # options are words
    "$BIN/pccx-compile" "$MODEL" --max-seq-len 128 $options -o "$bundle" \
      2> "$WORK/$name.compile.log"
    end=$(date +%s%N)
    echo $(((end - start) / 1000000)) > "$WORK/$name.compile-ms"
  fi
  result="$WORK/$name.$numerics.json"
  [ -f "$result" ] && continue # delete WORK_DIR to measure again
  printf '%s, %s numerics ... ' "$name" "$numerics" >&2
  "$BIN/pccx-run" "$bundle" --perplexity "$TEXT" --ctx 128 --stride 64 \
    --max-windows "$MAXW" --numerics "$numerics" --compare-reference "$MODEL" \
    --json > "$result.tmp"
  mv "$result.tmp" "$result"
  echo done >&2
done

python3 - "$WORK" "$CONFIGS" "$SRC/" <<'EOF'
import json, os, sys
work, configs, src = sys.argv[1], sys.argv[2].splitlines(), sys.argv[3]
rows = []
for line in configs:
    name, options, numerics = line.split("|")
    r = json.load(open(os.path.join(work, "%s.%s.json" % (name, numerics))))
    ref = r["reference"]
    secs = int(open(os.path.join(work, name + ".compile-ms")).read()) / 1000
    size = os.path.getsize(os.path.join(work, name + ".pccx"))
    rows.append((name, options, numerics, r, ref, secs, size))
first = rows[0][4]
print("demo model, %d held-out tokens in %d windows of %d positions, stride %d"
      % (rows[0][3]["tokens"], rows[0][3]["windows"], rows[0][3]["ctx"],
         rows[0][3]["stride"]))
print()
print("| weights (compile options) | numerics | ppl | ppl vs bf16 | mean KL | top-1 vs bf16 | bundle | compile |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
print("| bf16 (float reference, original weights) | fp32 | %.3f ± %.3f | — | — | — | — | — |"
      % (first["ppl"], first["ppl_stderr"]))
for name, options, numerics, r, ref, secs, size in rows:
    print("| %s (`%s`) | %s | %.3f ± %.3f | %+.2f %% ± %.2f | %.5f | %.4f ± %.4f | %.2f MB | %.2f s |"
          % (name, options.replace(src, ""), numerics, r["ppl"], r["ppl_stderr"],
             ref["ppl_change_percent"], ref["ln_ppl_ratio_stderr"] * 100,
             ref["mean_kl"], ref["top1_agreement"],
             ref["top1_agreement_stderr"], size / 1e6, secs))
EOF

# The CPU's integer numerics (the simulator's default) against the NPU's
# hardware numerics on the same bundles: the perplexity change, from the
# runs above, and the top-1 agreement of the two at every position of the
# held-out text, fed as prompts of at most 300 characters each (a bundle
# holds 128 positions).
python3 - "$WORK" "$BIN" "$TEXT" <<'EOF'
import json, os, struct, subprocess, sys
work, bin_dir, text = sys.argv[1:4]
words = open(text, encoding="utf-8").read().split()
chunks, cur = [], ""
for line in words:
    if cur and len(cur) + len(line) > 300:
        chunks.append(cur)
        cur = ""
    cur = (cur + " " + line).strip()
if cur:
    chunks.append(cur)

def logits(bundle, numerics, prompt):
    """The logits rows of every prompt position."""
    out = os.path.join(work, "agree.f32")
    run = subprocess.run([os.path.join(bin_dir, "pccx-run"), bundle, "--prompt", prompt,
                          "--max-new-tokens", "0", "--numerics", numerics,
                          "--dump-logits", out, "--json"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rows = json.loads(run.stdout.strip().splitlines()[-1])["logits_rows"]
    data = open(out, "rb").read()
    values = struct.unpack("<%df" % (len(data) // 4), data)
    vocab = len(values) // rows
    return [values[r * vocab:(r + 1) * vocab] for r in range(rows)]

print()
print("integer numerics against hardware numerics (the same bundle; top-1 over every position of %d prompts of held-out text)" % len(chunks))
print()
print("| weights | ppl, hardware | ppl, integer | change | top-1 agreement |")
print("|---|---:|---:|---:|---:|")
for name in ("int4-search", "int8"):
    if not all(os.path.exists(os.path.join(work, "%s.%s.json" % (name, n)))
               for n in ("hardware", "integer")):
        continue
    bundle = os.path.join(work, name + ".pccx")
    hw = json.load(open(os.path.join(work, name + ".hardware.json")))["ppl"]
    it = json.load(open(os.path.join(work, name + ".integer.json")))["ppl"]
    same = rows = 0
    for prompt in chunks:
        for ra, rb in zip(logits(bundle, "hardware", prompt), logits(bundle, "integer", prompt)):
            same += ra.index(max(ra)) == rb.index(max(rb))
            rows += 1
    print("| %s | %.3f | %.3f | %+.3f %% | %.4f (%d of %d) |"
          % (name, hw, it, 100 * (it / hw - 1), same / rows, same, rows))
EOF
