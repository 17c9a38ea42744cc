#!/bin/sh
# make demo: the most complete path through the product on the built-in tiny
# checkpoint. Usage: tools/demo.sh BUILD_DIR [OUT_DIR]
set -eu
BIN="$1/bin"
OUT="${2:-demo-out}"
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "1. Generate the tiny Gemma 3n checkpoint (Hugging Face layout, bf16)"
rm -rf "$OUT/tiny"
"$BIN/pccx-make-checkpoint" --preset tiny -o "$OUT/tiny"
ls -l "$OUT/tiny"

step "2. Import it into gemma3n IR (pccx-compile --emit=gemma3n) and re-read it with pccx-opt"
"$BIN/pccx-compile" "$OUT/tiny" --emit=gemma3n --max-seq-len 64 -o "$OUT/tiny.gemma3n.mlir"
"$BIN/pccx-opt" "$OUT/tiny.gemma3n.mlir" -o /dev/null
echo "ops per kind in $OUT/tiny.gemma3n.mlir:"
grep -oE '= gemma3n\.[a-z_.]+' "$OUT/tiny.gemma3n.mlir" | sed 's/^= //' | sort | uniq -c | sort -rn

step "3. Float reference: a 12-token prompt (longer than the window of 8), 8 greedy steps"
PROMPT=2,100,400,37,5,9,17,300,450,12,13,14
"$BIN/pccx-reference" "$OUT/tiny" --tokens $PROMPT --generate 8 \
  --dump-logits "$OUT/fp32.logits"
"$BIN/pccx-reference" "$OUT/tiny" --tokens $PROMPT --generate 8 --int4 \
  --dump-logits "$OUT/int4.logits" > "$OUT/int4.txt"
python3 - "$OUT/fp32.logits" "$OUT/int4.logits" <<'PY'
import array, math, sys
a, b = (array.array('f', open(p, 'rb').read()) for p in sys.argv[1:3])
V = 512
rows = len(a) // V
dot = sum(x * y for x, y in zip(a, b))
cos = dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
top = sum(max(range(V), key=lambda i: a[r*V+i]) == max(range(V), key=lambda i: b[r*V+i]) for r in range(rows))
print(f"INT4 weights vs original (cost of quantization): cosine {cos:.4f}, top-1 agreement {top}/{rows}")
PY

step "4. The v002 ISA layer: decode instruction words"
"$BIN/pccx-objdump" --raw 0x4700000000000040 0x0000000000000000

printf '\ndemo finished; outputs in %s/\n' "$OUT"
