#!/usr/bin/env python3
"""The arithmetic of bench/quality-peer.sh (windows, scores, bits per weight,
the table); the shell script runs the programs. Needs numpy.

  quality-peer.py windows LIBPCCXRT BUNDLE TEXT BOS CTX STRIDE N OUT
      tokenizes TEXT with BUNDLE's tokenizer (libpccxrt's pccxrt_tokenize,
      the tokenizer pccx-run --perplexity uses; no BOS, the whole file as
      one text) and plans pccx-run --perplexity's windows (runtime/app/
      Perplexity.cpp, planWindows): window w is BOS and text tokens
      [w*STRIDE, w*STRIDE + CTX - 1); each text token is scored once, from
      the row before it, in the first window that reaches it. Writes
      OUT.txt (one window per line, comma-separated ids, BOS first: the
      input of pccx-reference, pccx-run --tokens and llama_logits) and
      OUT.json (the plan and the targets). N is capped at the windows of
      full length (llama_logits takes windows of one length).
  quality-peer.py score WINDOWS.json VOCAB REF.f32 MODEL.f32
      scores MODEL's logits against REF's on the scored positions, as
      pccx-run --perplexity --compare-reference does: perplexity, its
      change against REF (and the standard error of the paired per-token
      log differences), mean KL (REF || MODEL), top-1 agreement, and the
      largest |logit difference|; one JSON object.
  quality-peer.py bpw-gguf GGUF_PY FILE.gguf
  quality-peer.py bpw-bundle INFO.txt MANIFEST.txt CKPT_DIR
      bytes and weights of the layers' attention and FFN matrices and of
      the whole model, and the types of the LM head and the per-layer
      table; one JSON object.
  quality-peer.py table WORK N CKPT_DIR ROWS
      the markdown table; ROWS is "name|label" per line.
"""
import ctypes
import json
import math
import os
import re
import struct
import sys

import numpy as np


def windows(lib_path, bundle, text_path, bos, ctx, stride, n, out):
    lib = ctypes.CDLL(lib_path)
    lib.pccxrt_open_device.restype = ctypes.c_void_p
    lib.pccxrt_open_device.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.pccxrt_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_size_t)]
    lib.pccxrt_last_error.restype = ctypes.c_char_p
    lib.pccxrt_last_error.argtypes = [ctypes.c_void_p]
    lib.pccxrt_close.argtypes = [ctypes.c_void_p]
    model = lib.pccxrt_open_device(bundle.encode(), b"sim", None)
    if not model:
        sys.exit("quality-peer: %s: %s" % (bundle, lib.pccxrt_last_error(None).decode()))
    text = open(text_path, "rb").read()
    count = ctypes.c_size_t(0)
    if lib.pccxrt_tokenize(model, text, 0, None, 0, ctypes.byref(count)) != 0:
        sys.exit("quality-peer: tokenize: %s" % lib.pccxrt_last_error(model).decode())
    ids = (ctypes.c_int32 * count.value)()
    if lib.pccxrt_tokenize(model, text, 0, ids, count.value, ctypes.byref(count)) != 0:
        sys.exit("quality-peer: tokenize: %s" % lib.pccxrt_last_error(model).decode())
    lib.pccxrt_close(model)
    tokens = list(ids)
    # planWindows with a BOS: ctx - 1 text tokens per window.
    per_window = ctx - 1
    plan, scored_up_to, begin = [], 0, 0
    while True:
        end = min(begin + per_window, len(tokens))
        first = max(scored_up_to, begin)
        if first < end:
            plan.append((begin, end, first))
        scored_up_to = end
        if end == len(tokens) or len(plan) == n:
            break
        begin += stride
    full = [w for w in plan if w[1] - w[0] == per_window]
    if len(full) < len(plan):
        print("quality-peer: %d windows (the last one is shorter than %d positions)"
              % (len(full), ctx), file=sys.stderr)
    plan = full
    with open(out + ".txt", "w") as f:
        for b, e, _ in plan:
            f.write(",".join(str(t) for t in [bos] + tokens[b:e]) + "\n")
    json.dump({"ctx": ctx, "stride": stride, "text_tokens": len(tokens),
               "windows": [{"begin": b, "end": e, "first_scored": s} for b, e, s in plan],
               "rows": [list(range(s - b, e - b)) for b, e, s in plan],
               "targets": [tokens[s:e] for b, e, s in plan]},
              open(out + ".json", "w"))
    print("%d text tokens, %d windows of %d positions, stride %d, %d scored"
          % (len(tokens), len(plan), ctx, stride, sum(e - s for _, e, s in plan)))


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def score(plan_path, vocab, ref_path, model_path):
    plan = json.load(open(plan_path))
    nw, ctx = len(plan["windows"]), plan["ctx"]
    shape = (nw, ctx, vocab)
    need = nw * ctx * vocab * 4
    for p in (ref_path, model_path):
        if os.path.getsize(p) < need:
            sys.exit("quality-peer: %s holds %d bytes, want %d (%d windows of %d rows of %d logits)"
                     % (p, os.path.getsize(p), need, nw, ctx, vocab))
    ref = np.memmap(ref_path, dtype="<f4", mode="r", shape=shape)
    mod = np.memmap(model_path, dtype="<f4", mode="r", shape=shape)
    nll, ref_nll, kl, agree, maxdiff = [], [], [], [], 0.0
    for w in range(nw):
        rows = np.array(plan["rows"][w])
        targets = np.array(plan["targets"][w])
        r, m = ref[w, rows], mod[w, rows]
        maxdiff = max(maxdiff, float(np.abs(r.astype(np.float64) - m).max()))
        lr, lm = log_softmax(r), log_softmax(m)
        idx = np.arange(len(rows))
        nll.append(-lm[idx, targets])
        ref_nll.append(-lr[idx, targets])
        kl.append(np.maximum((np.exp(lr) * (lr - lm)).sum(axis=1), 0.0))
        agree.append(r.argmax(axis=1) == m.argmax(axis=1))
    nll, ref_nll = np.concatenate(nll), np.concatenate(ref_nll)
    kl, agree = np.concatenate(kl), np.concatenate(agree)
    n = len(nll)
    diff = nll - ref_nll
    se = lambda v: float(v.std(ddof=1) / math.sqrt(len(v)))
    top1 = float(agree.mean())
    out = {"positions": n, "ppl": math.exp(nll.mean()), "ref_ppl": math.exp(ref_nll.mean()),
           "ppl_change_percent": (math.exp(diff.mean()) - 1) * 100,
           "ppl_change_stderr": math.exp(diff.mean()) * se(diff) * 100,
           "mean_kl": float(kl.mean()), "mean_kl_stderr": se(kl),
           "top1": top1, "top1_stderr": math.sqrt(top1 * (1 - top1) / n),
           "top1_count": int(agree.sum()), "max_abs_dlogit": maxdiff}
    print(json.dumps(out))


ATTN_FFN_GGUF = re.compile(r"^blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight$")
ATTN_FFN_HF = re.compile(r"^model\.layers\.\d+\.(self_attn\.[qkvo]_proj|mlp\.(gate|up|down)_proj)\.weight$")


def bpw_gguf(gguf_py, path):
    sys.path.insert(0, gguf_py)
    import gguf
    reader = gguf.GGUFReader(path)
    body_b = body_w = all_b = all_w = 0
    types = {}
    for t in reader.tensors:
        all_b += int(t.n_bytes)
        all_w += int(t.n_elements)
        types[t.name] = t.tensor_type.name
        if ATTN_FFN_GGUF.match(t.name):
            body_b += int(t.n_bytes)
            body_w += int(t.n_elements)
    head = types.get("output.weight", types.get("token_embd.weight"))
    print(json.dumps({"body_bytes": body_b, "body_weights": body_w, "bytes": all_b,
                      "weights": all_w, "head": head,
                      "ple": types.get("per_layer_token_embd.weight"),
                      "body_types": sorted({types[n] for n in types if ATTN_FFN_GGUF.match(n)})}))


def source_tensors(recipe):
    if isinstance(recipe, dict):
        for k, v in recipe.items():
            if k == "tensor":
                yield v
            else:
                yield from source_tensors(v)
    elif isinstance(recipe, list):
        for v in recipe:
            yield from source_tensors(v)


def checkpoint_weights(ckpt):
    """The number of weights of the checkpoint (every safetensors file)."""
    total = 0
    for name in sorted(os.listdir(ckpt)):
        if name.endswith(".safetensors"):
            with open(os.path.join(ckpt, name), "rb") as f:
                header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
            total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return total


def bpw_bundle(info_path, manifest_path, ckpt):
    info = open(info_path).read()
    def field(label):
        m = re.search(r"^\s*%s\s+(\d+) bytes" % label, info, re.M)
        if not m:
            sys.exit("quality-peer: pccx-objdump --info has no '%s' line" % label)
        return int(m.group(1))
    stored = field("NPU weights") + field("gather tables") + field("host tensors")
    text = open(manifest_path).read()
    manifest = json.loads(text[text.index("\n{") + 1:])
    body_b = body_w = 0
    head = None
    for e in manifest["weight_table"]:
        names = list(source_tensors(e["recipe"]))
        if any(ATTN_FFN_HF.match(n) for n in names):
            body_b += e["bytes"]
            body_w += e["rows"] * e["cols"]
        if "model.embed_tokens.weight" in names or "lm_head.weight" in names:
            head = e["recipe"].get("scheme", "?")
    ple = manifest.get("gather_tables", {}).get("model.embed_tokens_per_layer.weight", {})
    def fmt(scheme):
        """int4_per_row_search_gptq -> INT4/row; a group size N, if named, -> /gN."""
        if not scheme:
            return "?"
        m = re.match(r"(int\d+|bf16|fp16|f16|fp32|f32)", scheme)
        if not m:
            return scheme
        g = re.search(r"group_?(\d+)|_g(\d+)", scheme)
        per = "/g" + (g.group(1) or g.group(2)) if g else "/row" if "row" in scheme or m.group(1) == scheme else ""
        return m.group(1).upper() + per
    print(json.dumps({"body_bytes": body_b, "body_weights": body_w, "bytes": stored,
                      "weights": checkpoint_weights(ckpt), "head": fmt(head),
                      "ple": fmt(ple.get("recipe", {}).get("scheme") or ple.get("format")),
                      "body_types": sorted({e["recipe"].get("scheme", "?") for e in manifest["weight_table"]
                                            if any(ATTN_FFN_HF.match(n) for n in source_tensors(e["recipe"]))})}))


def table(work, n, ckpt, rows):
    plan = json.load(open(os.path.join(work, "windows-%s.json" % n)))
    scored = sum(len(r) for r in plan["rows"])
    weights = checkpoint_weights(ckpt)
    lines, ref_ppl = [], None
    for line in rows.strip().splitlines():
        name, label = line.split("|", 1)
        s = json.load(open(os.path.join(work, "results", "%s.w%s.score.json" % (name, n))))
        b = json.load(open(os.path.join(work, "results", "%s.bpw.json" % name)))
        ref_ppl = s["ref_ppl"]
        change = s["ppl_change_percent"] if abs(s["ppl_change_percent"]) >= 0.005 else 0.0
        lines.append("| %s | %s / %s | %.2f | %.2f | %.2f | %.3f | %+.2f %% ± %.2f | %.4f | %.3f |" % (
            label, b["head"], b["ple"], 8 * b["body_bytes"] / b["body_weights"],
            8 * b["bytes"] / b["weights"], b["bytes"] / 1e6, s["ppl"],
            change, s["ppl_change_stderr"], s["mean_kl"], s["top1"]))
    print("demo model (tools/demo-model, %d weights), %d held-out tokens scored in %d windows of %d positions, "
          "stride %d" % (weights, scored, len(plan["windows"]), plan["ctx"], plan["stride"]))
    print()
    print("| format | LM head / per-layer table | bits/weight, attention + FFN | bits/weight, whole model "
          "| weight MB | ppl | Δppl vs float | mean KL | top-1 vs float |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    print("| float reference (`pccx-reference`: fp32 math, the original bf16 weights) | BF16 / BF16 | 16.00 | 16.00 "
          "| %.2f | %.3f | — | — | — |" % (2 * weights / 1e6, ref_ppl))
    print("\n".join(lines))
    print()
    print("Bundles: pccx-run --dump-logits, the simulator's default integer numerics (INT8 activations, "
          "exact integer sums, INT8 KV records). llama.cpp: llama_decode of each window, its f16 KV cache. "
          "Bits per weight: bytes / weights; attention + FFN: the layers' q, k, v, o, gate, up and down "
          "matrices as the file holds them (scales included); whole model: every weight byte the file holds "
          "(a bundle: NPU weights, gather tables and host tensors, the tied embedding twice, as lookup table "
          "and LM head) over the checkpoint's %d weights. Standard errors: Δppl as shown (paired per token); "
          "top-1 about %.3f." % (weights, math.sqrt(0.1 * 0.9 / max(scored, 1))))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "windows" and len(args) == 8:
        windows(args[0], args[1], args[2], int(args[3]), int(args[4]), int(args[5]), int(args[6]), args[7])
    elif cmd == "score" and len(args) == 4:
        score(args[0], int(args[1]), args[2], args[3])
    elif cmd == "bpw-gguf" and len(args) == 2:
        bpw_gguf(*args)
    elif cmd == "bpw-bundle" and len(args) == 3:
        bpw_bundle(*args)
    elif cmd == "table" and len(args) == 4:
        table(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
