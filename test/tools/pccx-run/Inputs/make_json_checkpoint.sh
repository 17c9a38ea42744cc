#!/bin/sh
# The tiny checkpoint with a SentencePiece tokenizer that has byte fallback
# (every byte is a piece, as in Gemma's vocabulary: structured output needs
# that) and Gemma's turn markers as single pieces (ids: pad 0, eos 1, bos 2,
# unk 3, <start_of_turn> 4, <end_of_turn> 5). Usage: make_json_checkpoint.sh DIR
set -eu
rm -rf "$1"
pccx-make-checkpoint --preset tiny -o "$1" > /dev/null
spm_train --input="$(dirname "$0")/json-corpus.txt" --model_prefix="$1/tokenizer" \
  --vocab_size=384 --model_type=bpe --character_coverage=1.0 --byte_fallback=true \
  --pad_id=0 --eos_id=1 --bos_id=2 --unk_id=3 --hard_vocab_limit=false \
  --add_dummy_prefix=false --remove_extra_whitespaces=false \
  --user_defined_symbols='<start_of_turn>,<end_of_turn>' --minloglevel=2 \
  > "$1.spm.log" 2>&1
rm -f "$1/tokenizer.vocab"
