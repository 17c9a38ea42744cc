#!/bin/sh
# make demo: the product end to end on the trained demo model
# (tools/demo-model, docs/demo-model.md): a small Gemma 3n trained on the
# King James Bible and on conversations cut from it, with every Gemma 3n
# feature on.
# Usage: tools/demo.sh BUILD_DIR [OUT_DIR]
set -eu
BIN="$1/bin"
OUT="${2:-demo-out}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="$SRC/tools/demo-model"
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "1. The demo model (Hugging Face layout, bf16; trained by tools/train-demo-model/train.py)"
ls -l "$MODEL"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); print('hidden %d, %d layers (%d full attention, %d KV-shared), vocab %d, AltUp %d streams, LAuReL rank %d, PLE %d per layer, sparse FFN layers %d, soft-cap %g' % (c['hidden_size'], c['num_hidden_layers'], c['layer_types'].count('full_attention'), c['num_kv_shared_layers'], c['vocab_size'], c['altup_num_inputs'], c['laurel_rank'], c['hidden_size_per_layer_input'], sum(1 for s in c['activation_sparsity_pattern'] if s > 0), c['final_logit_softcapping']))" "$MODEL/config.json"

step "2. Compile it for pccx v002 (pccx-compile; INT4 weights, searched row scales)"
"$BIN/pccx-compile" "$MODEL" --max-seq-len 256 -o "$OUT/demo.pccx"
"$BIN/pccx-objdump" --headers --sections "$OUT/demo.pccx"
echo "first words of the decode program:"
"$BIN/pccx-objdump" -d "$OUT/demo.pccx" | sed -n '3,10p'

PROMPT="And it came to pass, when"
CHAT_1="In the beginning God created the heaven and the earth."
CHAT_2="Tell me of Moses."
step "3. Run a prompt on the simulator: the NPU's datapath (hardware numerics: BF16 L2, INT8 KV records) against the float reference, then the CPU's fast path (integer numerics, the default)"
echo "prompt: $PROMPT"
printf 'greedy, hardware numerics: '
"$BIN/pccx-run" "$OUT/demo.pccx" --prompt "$PROMPT" --max-new-tokens 40 \
  --stop-tokens "" --compare-reference "$MODEL"
echo "(how to read the two lines above: the first compares the NPU's datapath (BF16 L2, INT8 KV"
echo " records) with fp32 math on the very same INT4 weights; a cosine above 0.9999 and top-1"
echo " agreement on all rows but one or two are normal here. The second compares fp32 math on"
echo " the bundle's INT4 weights with the original bf16 weights: the cost of quantization alone,"
echo " cosine about 0.998 and top-1 on most rows on this model)"
printf 'greedy, integer numerics: '
"$BIN/pccx-run" "$OUT/demo.pccx" --prompt "$PROMPT" --max-new-tokens 40 \
  --stop-tokens ""
printf 'sampled, integer numerics: '
"$BIN/pccx-run" "$OUT/demo.pccx" --prompt "$PROMPT" --max-new-tokens 40 \
  --stop-tokens "" --temperature 0.7 --top-p 0.9 --repetition-penalty 1.1 \
  --seed 1

step "4. The same prompt in reference numerics (fp32 everywhere)"
printf 'greedy: '
"$BIN/pccx-run" "$OUT/demo.pccx" --prompt "$PROMPT" --max-new-tokens 40 \
  --stop-tokens "" --numerics reference --compare-reference "$MODEL"
echo "(reference numerics differ from the float reference only in the order of fp32 sums: a"
echo " relative max-abs difference near 1e-7 and cosine 1.000000 are what a correct lowering gives)"

step "5. Perplexity on held-out text (chapters never trained on): float reference vs bundle"
echo "(the first 48 windows of $MODEL/heldout.txt; bench/quality.sh scores all of it)"
"$BIN/pccx-run" "$OUT/demo.pccx" --perplexity "$MODEL/heldout.txt" \
  --ctx 128 --stride 64 --max-windows 48 --compare-reference "$MODEL"
echo "(normal for this model's INT4 bundle: perplexity within about 1.5 % of the float"
echo " reference's, mean KL near 0.015 nats, top-1 agreement near 0.9; bench/quality.sh compares"
echo " the weight options on all of the held-out text)"

step "6. MatFormer slices: smaller models inside the same checkpoint (docs/matformer.md)"
echo "(the demo model was trained as a MatFormer: each step trained one nested FFN width, so a"
echo " prefix of every FFN is a model too. Two slices, compiled from the same checkpoint with"
echo " --matformer-slice: every FFN at half width, and every FFN at a quarter)"
FFN=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['intermediate_size'][0])" "$MODEL/config.json")
LAYERS=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_hidden_layers'])" "$MODEL/config.json")
for part in 2 4; do
  python3 -c "import json,sys; json.dump({'ffn_hidden_dims': [int(sys.argv[1]) // int(sys.argv[2])] * int(sys.argv[3])}, open(sys.argv[4], 'w'))" \
    "$FFN" "$part" "$LAYERS" "$OUT/ffn-1of$part.json"
  "$BIN/pccx-compile" "$MODEL" --max-seq-len 256 --quiet \
    --matformer-slice "$OUT/ffn-1of$part.json" -o "$OUT/demo-ffn-1of$part.pccx"
done
for b in demo demo-ffn-1of2 demo-ffn-1of4; do
  ppl=$("$BIN/pccx-run" "$OUT/$b.pccx" --perplexity "$MODEL/heldout.txt" --ctx 128 \
    --stride 64 --max-windows 48 --json | python3 -c "import json,sys; j=json.load(sys.stdin); print('%.2f' % j['ppl'])")
  # The best of three runs: one short run is at the mercy of other work.
  rate=$(for run in 1 2 3; do "$BIN/pccx-run" "$OUT/$b.pccx" --prompt "$PROMPT" \
    --max-new-tokens 128 --stop-tokens "" --json; done | python3 -c "import json,sys; print('%.0f' % max(json.loads(l)['timing']['decode_tokens_per_second'] for l in sys.stdin if l.strip()))")
  wpt=$("$BIN/pccx-objdump" --info "$OUT/$b.pccx" | sed -n 's/^  weights\/token *\([0-9]*\) bytes.*/\1/p')
  printf '%-20s perplexity %7s   %8s weight bytes per token   decode %5s tok/s here (integer numerics)\n' \
    "$b.pccx" "$ppl" "$wpt" "$rate"
done
echo "(on the board decode time is the bytes per token: bench/README.md lists the published"
echo " slices of the full-size E4B with their modelled tok/s and MMLU)"

step "7. A short chat in Gemma's turn template (pccx-run --chat, two turns from a file)"
echo "(greedy, repetition penalty 1.3: fluent King-James pastiche that ends its turn by"
echo " itself; the model knows nothing, so its replies are not answers)"
printf '%s\n' "$CHAT_1" "$CHAT_2" > "$OUT/chat.txt"
"$BIN/pccx-run" "$OUT/demo.pccx" --chat-file "$OUT/chat.txt" --max-new-tokens 96 \
  --repetition-penalty 1.3

step "8. Scoring through the server as lm-evaluation-harness does (pccx-serve, echo + logprobs)"
echo "(tools/loglikelihood.py sends the harness' loglikelihood request for each item's choices"
echo " and picks the likeliest continuation: its multiple-choice accuracy)"
"$BIN/pccx-serve" "$OUT/demo.pccx" --port 0 --quiet > "$OUT/serve.out" 2> "$OUT/serve.log" &
SERVER=$!
URL=
for _ in $(seq 100); do
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$OUT/serve.out")
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { cat "$OUT/serve.log" >&2; kill "$SERVER"; exit 1; }
STATUS=0
python3 "$SRC/tools/loglikelihood.py" "$URL" "$MODEL/choices.jsonl" || STATUS=$?
kill -TERM "$SERVER"
wait "$SERVER"
[ "$STATUS" -eq 0 ]

printf '\nOutputs are in %s/.\n' "$OUT"
