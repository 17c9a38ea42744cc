#!/bin/sh
# make demo: the product end to end on the built-in tiny checkpoint.
# Usage: tools/demo.sh BUILD_DIR [OUT_DIR]
set -eu
BIN="$1/bin"
OUT="${2:-demo-out}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "1. A tiny Gemma 3n checkpoint (Hugging Face layout, bf16, random weights)"
rm -rf "$OUT/tiny"
"$BIN/pccx-make-checkpoint" --preset tiny -o "$OUT/tiny"

step "2. A 512-piece SentencePiece tokenizer, trained on this project's documentation"
# Gemma's special ids: pad 0, eos 1, bos 2, unk 3; its turn markers are
# single pieces, as in Gemma's tokenizer (pccx-run --chat needs them).
cat "$SRC"/README.md "$SRC"/docs/*.md > "$OUT/corpus.txt"
spm_train --input="$OUT/corpus.txt" --model_prefix="$OUT/tiny/tokenizer" \
  --vocab_size=512 --model_type=bpe --character_coverage=1.0 \
  --pad_id=0 --eos_id=1 --bos_id=2 --unk_id=3 --hard_vocab_limit=false \
  --user_defined_symbols='<start_of_turn>,<end_of_turn>' --minloglevel=2 > "$OUT/spm_train.log" 2>&1
rm -f "$OUT/tiny/tokenizer.vocab"
ls -l "$OUT/tiny"

step "3. Compile it for pccx v002 (pccx-compile)"
"$BIN/pccx-compile" "$OUT/tiny" --max-seq-len 128 -o "$OUT/tiny.pccx"
"$BIN/pccx-objdump" --headers --sections "$OUT/tiny.pccx"
echo "first words of the decode program:"
"$BIN/pccx-objdump" -d "$OUT/tiny.pccx" | sed -n '3,14p'

PROMPT="The compiler lowers each layer to GEMV instructions and"
step "4. Run a prompt on the simulator (hardware numerics: BF16 L2, fp16 KV cache)"
echo "prompt: $PROMPT"
printf 'generated: '
"$BIN/pccx-run" "$OUT/tiny.pccx" --prompt "$PROMPT" --max-new-tokens 24 \
  --stop-tokens "" --temperature 0.8 --top-p 0.9 --repetition-penalty 1.15 \
  --seed 1 --compare-reference "$OUT/tiny"

step "5. The same in reference numerics (fp32 everywhere)"
printf 'generated: '
"$BIN/pccx-run" "$OUT/tiny.pccx" --prompt "$PROMPT" --max-new-tokens 24 \
  --stop-tokens "" --temperature 0.8 --top-p 0.9 --repetition-penalty 1.15 \
  --seed 1 --numerics reference --compare-reference "$OUT/tiny"

step "6. A chat in Gemma's turn template (pccx-run --chat; two turns from stdin, the KV cache kept between them)"
printf 'Hello!\nWhat does the compiler do?\n' |
  "$BIN/pccx-run" "$OUT/tiny.pccx" --chat --max-new-tokens 16

printf '\n(The weights are random, so the text is too; the agreement figures\n'
printf 'are what the demo shows.) Outputs are in %s/.\n' "$OUT"
