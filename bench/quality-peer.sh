#!/bin/sh
# Quality side by side with llama.cpp's formats (issue 49): on the demo
# model's held-out text (tools/demo-model, docs/demo-model.md), llama.cpp's
# own quantizer and CPU kernels (Q8_0, Q4_0, Q4_0 --pure, Q4_K_S, Q4_K_M)
# and this project's bundles (the default options, --int8-weights for the
# tied embedding, data-free GPTQ, and every --preset pccx-compile offers)
# are scored against one float reference (pccx-reference, fp32 math on the
# original bf16 weights), on the same windows of token ids: bits per weight
# (the layers' attention and FFN matrices, and the whole model), perplexity
# change, mean KL divergence (float || quantized) and top-1 agreement.
#
# Windows are pccx-run --perplexity's (--ctx 128 --stride 64, as
# bench/quality.sh scores): the text tokenized by the bundle's tokenizer,
# window w = BOS + text tokens [64w, 64w + 127), each token scored once.
# The windows are checked against pccx-run --perplexity --compare-reference
# on the default bundle (same figures, or the bench stops). llama.cpp's
# side is checked first as well: its F32 GGUF (f32 KV cache) must match the
# float reference within --f32-tolerance in every logit, or the bench
# stops. Bundles run in the simulator's default integer numerics (INT8
# activations, exact integer sums; INT8 KV records); llama.cpp runs with its
# defaults (f16 KV cache), one llama_decode per window.
#
# llama.cpp comes from the peer kit beside the checkout
# (../shared/peer/llamacpp: setup.sh installs npm's node-llama-cpp, its
# prebuilt CPU libraries and llama.cpp's sources; build-libllama.sh rebuilds
# libllama with the patch that reads Gemma 3n's shape from the GGUF, which
# the demo model needs; quantize.c and llama_logits.c call
# llama_model_quantize and llama_decode). Its vocabulary is synthetic: it is
# driven with token ids. Everything it builds and every result is cached in
# WORK_DIR (the first run builds libllama: about 5 minutes on one core);
# delete a file there to measure it again.
#
# Usage: bench/quality-peer.sh BUILD_DIR [WORK_DIR] [--windows N] [--threads T]
#          [--f32-tolerance X] [--peer-install DIR] [--config 'NAME|OPTIONS']...
#          [--e2b]
#   WORK_DIR          default ${TMPDIR:-/tmp}/pccx-quality-peer (it holds
#                     node_modules, llama.cpp's sources and GGUF files; it
#                     gets a .gitignore of "*" wherever it is)
#   --windows N       score the first N windows (default 40; 0 or more
#                     than 159: all 159 of full length)
#   --threads T       threads of llama.cpp and of the simulator (default 1)
#   --f32-tolerance X largest |logit difference| allowed between llama.cpp's
#                     F32 file and the float reference (default 0.05)
#   --peer-install DIR  where setup.sh installs node-llama-cpp (default
#                     WORK_DIR/llama)
#   --config 'NAME|OPTIONS'  one more bundle of this project, compiled
#                     with pccx-compile OPTIONS, shown as NAME (repeatable)
#   --e2b             the E2B-shaped part of issue 49 (weight bytes per
#                     token, one-thread decode against Q4_K_M): not
#                     implemented yet, refused
set -eu
usage() { sed -n '/^# Usage:/,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
BUILD="$1"; shift
WORK="${TMPDIR:-/tmp}/pccx-quality-peer"
if [ $# -gt 0 ]; then
  case "$1" in -*) ;; *) WORK="$1"; shift ;; esac
fi
N=40; THREADS=1; TOL=0.05; INSTALL=""; EXTRA=""
while [ $# -gt 0 ]; do
  case "$1" in
    --windows) N="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --f32-tolerance) TOL="$2"; shift 2 ;;
    --peer-install) INSTALL="$2"; shift 2 ;;
    --config) EXTRA="$EXTRA$2
"; shift 2 ;;
    --e2b) echo "quality-peer: --e2b (weight bytes per token and one-thread decode against llama.cpp Q4_K_M on the 30-layer E2B shape) is not implemented yet; bench/llama-side-by-side.sh measures decode speed" >&2; exit 2 ;;
    -h|--help) usage ;;
    *) echo "quality-peer: unknown option $1" >&2; usage ;;
  esac
done
case "$N" in ''|*[!0-9]*) echo "quality-peer: --windows wants a number, got '$N'" >&2; exit 2 ;; esac

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
MODEL="$SRC/tools/demo-model"
TEXT="$MODEL/heldout.txt"
PEER="$SRC/../shared/peer/llamacpp"
if [ ! -d "$PEER" ]; then
  echo "quality-peer: the llama.cpp peer kit is not at $PEER (expected beside the checkout, as ../shared/peer/llamacpp relative to $SRC)" >&2
  exit 1
fi
PEER=$(cd "$PEER" && pwd)
for f in README.md setup.sh build-libllama.sh hf_to_gguf_gemma3n.py quantize.c llama_logits.c; do
  [ -f "$PEER/$f" ] || { echo "quality-peer: the peer kit $PEER has no $f" >&2; exit 1; }
done
BUILD=$(cd "$BUILD" && pwd)
BIN="$BUILD/bin"
for t in pccx-compile pccx-run pccx-reference pccx-objdump; do
  [ -x "$BIN/$t" ] || { echo "quality-peer: $BIN/$t is missing (build the tree first)" >&2; exit 1; }
done
LIBPCCXRT="$BUILD/lib/libpccxrt.so"
[ -f "$LIBPCCXRT" ] || { echo "quality-peer: $LIBPCCXRT is missing (build the tree first)" >&2; exit 1; }
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import numpy' 2> /dev/null; then
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
    PYTHON=/usr/bin/python3
  else
    echo "quality-peer: needs numpy ($PYTHON; apt-get install python3-numpy, or set PYTHON)" >&2
    exit 1
  fi
fi
if ! command -v cc > /dev/null || ! command -v g++ > /dev/null; then
  echo "quality-peer: needs cc and g++ (to build libllama and the two drivers)" >&2
  exit 1
fi
helper() { "$PYTHON" "$HERE/quality-peer.py" "$@"; }

START=$(date +%s)
START_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
[ -f "$WORK/.gitignore" ] || echo '*' > "$WORK/.gitignore" # never committed by accident
[ -n "$INSTALL" ] || INSTALL="$WORK/llama"
mkdir -p "$WORK/bundles" "$WORK/gguf" "$WORK/logits" "$WORK/results" "$WORK/bin"
note() { echo "quality-peer: $*" >&2; }

# --- llama.cpp: the package, the patched libllama, the two drivers ---------
note "peer kit $PEER, installed in $INSTALL"
# node_modules=... gguf_py=... libggml=...
gguf_py=""; libggml=""
eval "$(sh "$PEER/setup.sh" "$INSTALL" 2> "$WORK/llama-setup.log" | tail -1)"
if [ ! -d "$gguf_py" ] || [ ! -f "$libggml" ]; then
  echo "quality-peer: $PEER/setup.sh did not install the peer into $INSTALL (log: $WORK/llama-setup.log)" >&2
  exit 1
fi
LIBDIR="$WORK/libllama"
if [ ! -f "$LIBDIR/libllama.v0.5.0.so" ]; then
  note "building libllama with gemma3n-hparams.patch (minutes; log $WORK/libllama.log) ..."
  JOBS=1 nice -n 10 sh "$PEER/build-libllama.sh" "$INSTALL" "$LIBDIR" > "$WORK/libllama.log" 2>&1 ||
    { tail -20 "$WORK/libllama.log" >&2; exit 1; }
fi
for d in quantize llama_logits; do
  if [ ! -x "$WORK/bin/$d" ]; then
    cc -O2 "$PEER/$d.c" -I "$LIBDIR/src/include" -I "$LIBDIR/src/ggml/include" -L "$LIBDIR" \
      -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$LIBDIR" \
      -o "$WORK/bin/$d"
  fi
done

# --- this project's configurations -----------------------------------------
# name|pccx-compile options|label
CONFIGS="pccx-default||this project, default (\`pccx-compile\` with no options)
pccx-emb8|--int8-weights embed_tokens\\.weight|this project, \`--int8-weights 'embed_tokens\\.weight'\`
pccx-gptq-datafree|--int4-rounding gptq|this project, \`--int4-rounding gptq\` (data-free)"
# Every named preset the compiler offers (--preset=<a|b|c> in --help).
PRESETS=$("$BIN/pccx-compile" --help 2>&1 |
  sed -n 's/^ *--preset=<\([A-Za-z0-9_.|-]*\)>.*/\1/p' | tr '|' ' ')
for p in $PRESETS; do
  CONFIGS="$CONFIGS
pccx-preset-$p|--preset $p|this project, \`--preset $p\`"
done
if [ -z "$PRESETS" ] && "$BIN/pccx-compile" --help 2>&1 | grep -q -- '--preset'; then
  note "pccx-compile has a --preset option but lists no names; pass them with --config"
fi
if [ -n "$EXTRA" ]; then
  CONFIGS="$CONFIGS
$(printf '%s' "$EXTRA" | awk -F'|' 'NF { o = $2; for (i = 3; i <= NF; i++) o = o "|" $i; print "pccx-" $1 "|" o "|this project, " $1 " (`" o "`)" }')"
fi

set -f # the options hold regular expressions
echo "$CONFIGS" | while IFS='|' read -r name options _; do
  bundle="$WORK/bundles/$name.pccx"
  [ -f "$bundle" ] && continue
  note "compiling $name ($options) ..."
  # shellcheck disable=SC2086 # options are words
  nice -n 10 "$BIN/pccx-compile" "$MODEL" --max-seq-len 128 --quiet $options -o "$bundle.tmp" \
    2> "$WORK/bundles/$name.compile.log" || { cat "$WORK/bundles/$name.compile.log" >&2; exit 1; }
  mv "$bundle.tmp" "$bundle"
done
set +f

# --- windows ------------------------------------------------------------------
WIN="$WORK/windows-$N"
if [ ! -f "$WIN.json" ]; then
  BOS=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["bos_token_id"])' "$MODEL/config.json")
  helper windows "$LIBPCCXRT" "$WORK/bundles/pccx-default.pccx" "$TEXT" "$BOS" 128 64 "$N" "$WIN.tmp" >&2
  mv "$WIN.tmp.txt" "$WIN.txt"; mv "$WIN.tmp.json" "$WIN.json"
fi
NW=$(wc -l < "$WIN.txt" | tr -d ' ')
VOCAB=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$MODEL/config.json")

# Logits of every window through PROGRAM (pccx-reference or pccx-run),
# one process per window, rows appended.
window_logits() { # OUT PROGRAM ARGS...
  out="$1"; shift
  [ -f "$out" ] && return 0
  : > "$out.tmp"
  k=0
  while IFS= read -r ids; do
    k=$((k + 1))
    nice -n 10 "$@" --tokens "$ids" --dump-logits "$out.win" > "$out.log" 2>&1 ||
      { cat "$out.log" >&2; exit 1; }
    cat "$out.win" >> "$out.tmp"
  done < "$WIN.txt"
  rm -f "$out.win" "$out.log"
  mv "$out.tmp" "$out"
}

# --- the float reference ------------------------------------------------------
REF="$WORK/logits/float.w$N.f32"
[ -f "$REF" ] || note "float reference, $NW windows ..."
window_logits "$REF" "$BIN/pccx-reference" "$MODEL"

# --- llama.cpp's files -----------------------------------------------------------
for mix in f32 bf16; do
  g="$WORK/gguf/demo-$mix.gguf"
  [ -f "$g" ] && continue
  note "converting the demo model to GGUF ($mix) ..."
  "$PYTHON" "$PEER/hf_to_gguf_gemma3n.py" "$MODEL" "$g.tmp" --gguf-py "$gguf_py" \
    --libggml "$libggml" --mix "$mix" > "$g.log" 2>&1 || { cat "$g.log" >&2; exit 1; }
  mv "$g.tmp" "$g"
done
# name|quantize type and options|label
LLAMA="llama-q8_0|Q8_0|llama.cpp Q8_0
llama-q4_0|Q4_0|llama.cpp Q4_0 (its mix)
llama-q4_0-pure|Q4_0 --pure|llama.cpp Q4_0 \`--pure\`
llama-q4_k_s|Q4_K_S|llama.cpp Q4_K_S
llama-q4_k_m|Q4_K_M|llama.cpp Q4_K_M"
echo "$LLAMA" | while IFS='|' read -r name qtype _; do
  g="$WORK/gguf/$name.gguf"
  [ -f "$g" ] && continue
  note "llama_model_quantize $qtype ..."
  # shellcheck disable=SC2086 # the type and its options are words
  nice -n 10 "$WORK/bin/quantize" "$WORK/gguf/demo-bf16.gguf" "$g.tmp" $qtype > "$g.log" 2>&1 ||
    { tail -20 "$g.log" >&2; exit 1; }
  mv "$g.tmp" "$g"
done
llama_logits() { # OUT GGUF KV
  [ -f "$1" ] && return 0
  note "llama.cpp logits: $(basename "$2") (KV cache $3), $NW windows ..."
  nice -n 10 "$WORK/bin/llama_logits" "$2" "$WIN.txt" "$1.tmp" --backends "$LIBDIR" \
    --threads "$THREADS" --kv "$3" > "$1.log" 2>&1 || { tail -20 "$1.log" >&2; exit 1; }
  mv "$1.tmp" "$1"
}
score() { # NAME LOGITS
  s="$WORK/results/$1.w$N.score.json"
  [ -f "$s" ] && return 0
  helper score "$WIN.json" "$VOCAB" "$REF" "$2" > "$s.tmp"
  mv "$s.tmp" "$s"
}

# F32 agreement first: the same function, or nothing below means anything.
llama_logits "$WORK/logits/llama-f32-kvf32.w$N.f32" "$WORK/gguf/demo-f32.gguf" f32
score llama-f32-kvf32 "$WORK/logits/llama-f32-kvf32.w$N.f32"
F32CHECK=$("$PYTHON" - "$WORK/results/llama-f32-kvf32.w$N.score.json" "$TOL" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
tol = float(sys.argv[2])
print("llama.cpp F32 (f32 KV cache) against the float reference: max |Δlogit| %.4f over %d scored positions, "
      "top-1 %d of %d, mean KL %.1e" % (s["max_abs_dlogit"], s["positions"], s["top1_count"],
                                         s["positions"], s["mean_kl"]))
sys.exit(0 if s["max_abs_dlogit"] <= tol else 1)
EOF
) || {
  echo "quality-peer: $F32CHECK" >&2
  echo "quality-peer: llama.cpp's F32 file disagrees with the float reference beyond --f32-tolerance $TOL: the two do not compute the same model (the converter, the patched libllama or the reference changed); nothing else is scored" >&2
  exit 1
}
note "$F32CHECK"

llama_logits "$WORK/logits/llama-f32.w$N.f32" "$WORK/gguf/demo-f32.gguf" f16
score llama-f32 "$WORK/logits/llama-f32.w$N.f32"
echo "$LLAMA" | while IFS='|' read -r name _ _; do
  llama_logits "$WORK/logits/$name.w$N.f32" "$WORK/gguf/$name.gguf" f16
  score "$name" "$WORK/logits/$name.w$N.f32"
done

# --- this project's bundles ---------------------------------------------------
echo "$CONFIGS" | while IFS='|' read -r name _ _; do
  out="$WORK/logits/$name.w$N.f32"
  [ -f "$out" ] || note "$name: pccx-run --numerics integer, $NW windows ..."
  window_logits "$out" "$BIN/pccx-run" "$WORK/bundles/$name.pccx" --max-new-tokens 0 \
    --numerics integer --threads "$THREADS" --host-threads "$THREADS"
  score "$name" "$out"
done

# The windows are pccx-run --perplexity's: its own figures on the default
# bundle must be the ones scored here from the dumped logits.
PPL="$WORK/results/pccx-default.w$N.perplexity.json"
if [ ! -f "$PPL" ]; then
  note "cross-check: pccx-run --perplexity --compare-reference on the default bundle ..."
  nice -n 10 "$BIN/pccx-run" "$WORK/bundles/pccx-default.pccx" --perplexity "$TEXT" --ctx 128 \
    --stride 64 --max-windows "$NW" --numerics integer --threads "$THREADS" \
    --host-threads "$THREADS" --compare-reference "$MODEL" --json > "$PPL.tmp"
  mv "$PPL.tmp" "$PPL"
fi
CROSS=$("$PYTHON" - "$PPL" "$WORK/results/pccx-default.w$N.score.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
r, s = p["reference"], json.load(open(sys.argv[2]))
print("pccx-run --perplexity on the default bundle: %d tokens, ppl %.4f, change %+.3f %%, KL %.5f, top-1 %.4f; "
      "scored here: %d tokens, ppl %.4f, change %+.3f %%, KL %.5f, top-1 %.4f"
      % (p["tokens"], p["ppl"], r["ppl_change_percent"], r["mean_kl"], r["top1_agreement"],
         s["positions"], s["ppl"], s["ppl_change_percent"], s["mean_kl"], s["top1"]))
ok = (p["tokens"] == s["positions"] and abs(p["ppl"] / s["ppl"] - 1) < 1e-4
      and abs(r["ppl_change_percent"] - s["ppl_change_percent"]) < 0.01
      and abs(r["mean_kl"] - s["mean_kl"]) <= 1e-3 * s["mean_kl"] + 1e-6
      and abs(r["top1_agreement"] - s["top1"]) <= 2.0 / s["positions"])
sys.exit(0 if ok else 1)
EOF
) || {
  echo "quality-peer: $CROSS" >&2
  echo "quality-peer: the windows scored here are not pccx-run --perplexity's" >&2
  exit 1
}
note "$CROSS"

# --- bits per weight ------------------------------------------------------------
echo "$LLAMA
llama-f32|F32|llama.cpp F32" | while IFS='|' read -r name _ _; do
  b="$WORK/results/$name.bpw.json"
  g="$WORK/gguf/$name.gguf"; [ "$name" = llama-f32 ] && g="$WORK/gguf/demo-f32.gguf"
  [ -f "$b" ] && continue
  helper bpw-gguf "$gguf_py" "$g" > "$b.tmp"
  mv "$b.tmp" "$b"
done
echo "$CONFIGS" | while IFS='|' read -r name _ _; do
  b="$WORK/results/$name.bpw.json"
  [ -f "$b" ] && continue
  "$BIN/pccx-objdump" --info "$WORK/bundles/$name.pccx" > "$WORK/bundles/$name.info.txt"
  "$BIN/pccx-objdump" --manifest-json "$WORK/bundles/$name.pccx" > "$WORK/bundles/$name.manifest.txt"
  helper bpw-bundle "$WORK/bundles/$name.info.txt" "$WORK/bundles/$name.manifest.txt" "$MODEL" > "$b.tmp"
  mv "$b.tmp" "$b"
done

# --- the table ------------------------------------------------------------------------
ROWS="llama-f32|llama.cpp F32 (its default f16 KV cache)
$(echo "$LLAMA" | cut -d'|' -f1,3)
$(echo "$CONFIGS" | cut -d'|' -f1,3)"
END=$(date +%s)
echo
echo "quality-peer.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs; load average $START_LOAD at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $((END - START)) s"
echo "$F32CHECK"
echo
helper table "$WORK" "$N" "$MODEL" "$ROWS"
