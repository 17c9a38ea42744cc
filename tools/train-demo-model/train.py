#!/usr/bin/python3
"""Trains the demo model: a small Gemma 3n text decoder on the King James Bible.

Every Gemma 3n feature the importer supports is on: AltUp (4 streams),
LAuReL, per-layer embeddings (PLE), gaussian top-k activation sparsity,
sliding and full attention layers, KV sharing and final-logit soft-capping.
The forward pass is Hugging Face's Gemma 3n text decoder
(docs/gemma3n-semantics.md, runtime/reference/Reference.cpp) written in torch,
with KV sharing as HF computes it when a cache is in use: a consumer layer
attends over its source layer's keys and values.

Steps (docs/demo-model.md):
  1. corpus: `bible` (Debian bible-kjv) prints the text; one chapter per
     line; every HOLDOUT_EVERY-th chapter is held out (heldout.txt), and a
     few training chapters are written as calibration text
     (calibration.txt, for pccx-compile --int8-budget);
  2. tokenizer: spm_train (Debian sentencepiece) on the training verses,
     with Gemma's turn markers <start_of_turn> and <end_of_turn> as
     user-defined pieces (single tokens, as the runtime's chat needs);
  3. chat data: conversations cut from the training chapters (a verse or a
     short request as the user turn, the verses that follow as the model's
     turn), tokenized exactly as the runtime's built-in Gemma template
     renders them (runtime/app/Chat.cpp);
  4. training: AdamW, warm-up then cosine decay; each batch mixes windows
     of BOS + CTX-1 tokens at random offsets of the plain training token
     stream with windows that start at a conversation's BOS;
  5. export in Hugging Face layout (config.json, bf16 model.safetensors,
     tokenizer.model), then the export is checked: the project's float
     reference (pccx-reference) must reproduce torch's logits on the
     exported bf16 weights, or the script fails.

Needs python3-torch and python3-sentencepiece (and, for speed, an optimised
BLAS such as libopenblas0-serial). Only this script uses them; the build and
the tests never do.
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import sentencepiece
import torch
import torch.nn.functional as F

HOLDOUT_EVERY = 100  # every 100th chapter is held-out text
CALIBRATION_CHAPTERS = [1, 300, 600, 900]  # training chapters, for --int8-budget

CONFIG = {
    "model_type": "gemma3n_text",
    "architectures": ["Gemma3nForCausalLM"],
    "vocab_size": 2048,
    "vocab_size_per_layer_input": 2048,
    "hidden_size": 256,
    "hidden_size_per_layer_input": 32,
    "num_hidden_layers": 10,
    "intermediate_size": [384] * 10,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "layer_types": ["full_attention" if (i + 1) % 5 == 0
                    else "sliding_attention" for i in range(10)],
    "sliding_window": 64,
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "rms_norm_eps": 1e-06,
    "final_logit_softcapping": 30.0,
    "activation_sparsity_pattern": [0.95, 0.95, 0.95] + [0.0] * 7,
    # Layers 8 (sliding) and 9 (full) read the caches of layers 7 and 4.
    "num_kv_shared_layers": 2,
    "altup_num_inputs": 4,
    "altup_active_idx": 0,
    "altup_coef_clip": 120.0,
    "altup_correct_scale": True,
    "laurel_rank": 16,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "bos_token_id": 2,
    "pad_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "bfloat16",
}


def fail(message):
    print("train.py: error: " + message, file=sys.stderr)
    sys.exit(1)


# ----------------------------------------------------------------- corpus --

def read_corpus():
    """Chapters of the KJV as single lines, verse numbers removed."""
    try:
        text = subprocess.run(["bible", "Gen1:1-Rev22:21"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail("cannot run `bible` (apt-get install bible-kjv): %s" % e)
    chapters, names, verses, verse = [], [], [], []
    heading = re.compile(r"^[1-3]?\s?[A-Z][A-Za-z ]+ \d+$")
    start = re.compile(r"^\s+\d+ (.*)$")

    def end_verse():
        if verse:
            verses.append(" ".join(verse))
            verse.clear()

    for line in text.splitlines():
        if heading.match(line.strip()) and not line.startswith(" "):
            end_verse()
            if verses:
                chapters.append(list(verses))
                verses.clear()
            names.append(line.strip())
            continue
        m = start.match(line)
        if m:
            end_verse()
            verse.append(m.group(1).strip())
        elif line.strip():
            verse.append(line.strip())
    end_verse()
    if verses:
        chapters.append(list(verses))
    if len(chapters) != 1189:
        fail("expected 1189 chapters from `bible`, got %d" % len(chapters))
    return chapters, names


def spm_ids(model, lines):
    """The ids the runtime's tokenizer (the same libsentencepiece) gives."""
    return model.encode(list(lines))


# Gemma's turn markers: single user-defined pieces, as in Gemma's tokenizer.
START_OF_TURN, END_OF_TURN = "<start_of_turn>", "<end_of_turn>"
SYSTEM_PROMPTS = ["Answer in the words of the King James Bible.",
                  "You are a helpful assistant.",
                  "Speak as the scriptures speak."]
COMMON = set("""after again against also among because before behold cometh
either every great hath have into made neither other said saith shall should
since their them then there therefore these they thing things this those thou
thee through unto upon were what when where which while whom with without
would your""".split())


def conversations(chapters, names, rng):
    """Chat-formatted exchanges cut from the chapters, in order: each user
    turn is a verse, a request naming the book, or a request naming a word,
    and the model's turn is the verses that follow (one to three), so a
    reply is scripture-like text that ends with <end_of_turn> by itself.
    Returns [(system prompt or "", [(user, model), ...])]."""
    out = []
    for ch, name in zip(chapters, names):
        book = name.rsplit(" ", 1)[0]
        k = 0
        while k < len(ch) - 1:
            exchanges = []
            for _ in range(rng.choice([1, 2, 2, 3])):
                if k >= len(ch) - 1:
                    break
                n = rng.choice([1, 1, 2, 3])
                reply = ch[k + 1:k + 1 + n]
                words = [w.strip(".,;:?!()'").lower()
                         for w in " ".join(reply).split()]
                words = [w for w in words if len(w) > 4 and w.isalpha()
                         and w not in COMMON]
                kind = rng.random()
                if kind < 0.15:
                    user = rng.choice(["Read me from %s.", "What saith %s?",
                                       "Speak to me from %s.", "%s"]) % book
                elif kind < 0.3 and words:
                    user = rng.choice(["Tell me of %s.", "What of %s?",
                                       "Speak of %s.", "%s"]) % rng.choice(words)
                else:
                    user = ch[k]
                exchanges.append((user, " ".join(reply)))
                k += 1 + n
            system = rng.choice(SYSTEM_PROMPTS) if rng.random() < 0.1 else ""
            out.append((system, exchanges))
    return out


def chat_ids(sp, system, exchanges, bos):
    """A conversation's ids exactly as the runtime renders it (Chat.cpp):
    BOS, then per turn <start_of_turn>, the role and "\n" and the trimmed
    text encoded together, <end_of_turn>, "\n"; a system prompt and a blank
    line open the first user turn."""
    sot, eot = sp.piece_to_id(START_OF_TURN), sp.piece_to_id(END_OF_TURN)
    nl = sp.encode("\n")
    ids = [bos]
    for i, (user, model) in enumerate(exchanges):
        text = user.strip()
        if i == 0 and system:
            text = system.strip() + "\n\n" + text
        ids += [sot] + sp.encode("user\n" + text) + [eot] + nl
        ids += [sot] + sp.encode("model\n" + model.strip()) + [eot] + nl
    return ids


# ------------------------------------------------------------------ model --

def rms(x, eps, gain=None):
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + eps, -0.5)
    return y * gain if gain is not None else y


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def rope(x, theta):
    """Rotate-halves RoPE over the last axis; x is [B, T, heads, hd]."""
    t, hd = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
    half = hd // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


class Gemma3nText(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H, P, L, A = (c["hidden_size"], c["hidden_size_per_layer_input"],
                      c["num_hidden_layers"], c["altup_num_inputs"])
        nq, nk, hd, R = (c["num_attention_heads"], c["num_key_value_heads"],
                         c["head_dim"], c["laurel_rank"])
        p = {}

        def lin(name, out, inp, std=None):
            p[name] = torch.randn(out, inp) * (std or inp ** -0.5)

        def gain(name, n, value=1.0):
            p[name] = torch.full((n,), value)

        p["embed_tokens.weight"] = torch.randn(c["vocab_size"], H) * H ** -0.5
        p["embed_tokens_per_layer.weight"] = (
            torch.randn(c["vocab_size_per_layer_input"], L * P) * P ** -0.5)
        lin("per_layer_model_projection.weight", L * P, H)
        gain("per_layer_projection_norm.weight", P)
        for k in range(A - 1):
            lin("altup_projections.%d.weight" % k, H, H)
            lin("altup_unembed_projections.%d.weight" % k, H, H)
        gain("norm.weight", H)
        for i in range(L):
            q = "layers.%d." % i
            Fi = c["intermediate_size"][i]
            lin(q + "self_attn.q_proj.weight", nq * hd, H)
            lin(q + "self_attn.k_proj.weight", nk * hd, H)
            lin(q + "self_attn.v_proj.weight", nk * hd, H)
            lin(q + "self_attn.o_proj.weight", H, nq * hd,
                (nq * hd) ** -0.5 / math.sqrt(2 * L))
            gain(q + "self_attn.q_norm.weight", hd)
            gain(q + "self_attn.k_norm.weight", hd)
            lin(q + "mlp.gate_proj.weight", Fi, H)
            lin(q + "mlp.up_proj.weight", Fi, H)
            lin(q + "mlp.down_proj.weight", H, Fi, Fi ** -0.5 / math.sqrt(2 * L))
            for n in ("input_layernorm", "post_attention_layernorm",
                      "pre_feedforward_layernorm", "post_feedforward_layernorm",
                      "post_per_layer_input_norm"):
                gain(q + n + ".weight", H)
            gain(q + "altup.correct_output_scale", H)
            p[q + "altup.correction_coefs.weight"] = torch.zeros(A, A)
            p[q + "altup.prediction_coefs.weight"] = torch.zeros(A * A, A)
            lin(q + "altup.modality_router.weight", A, H, 1.0)
            gain(q + "altup.router_norm.weight", H)
            lin(q + "laurel.linear_left.weight", R, H)
            lin(q + "laurel.linear_right.weight", H, R, R ** -0.5 * 0.1)
            gain(q + "laurel.post_laurel_norm.weight", H)
            lin(q + "per_layer_input_gate.weight", P, H)
            lin(q + "per_layer_projection.weight", H, P)
        self.names = sorted(p)
        self.params = torch.nn.ParameterList(
            [torch.nn.Parameter(p[n]) for n in self.names])
        self.index = {n: k for k, n in enumerate(self.names)}
        first = L - c["num_kv_shared_layers"]
        types = c["layer_types"]
        self.kv_source = []
        for i in range(L):
            if first > 0 and i >= first:
                self.kv_source.append(
                    max(j for j in range(first) if types[j] == types[i]))
            else:
                self.kv_source.append(i)

    def w(self, name):
        return self.params[self.index[name]]

    def forward(self, ids, ffn_width=None):
        """Logits of `ids`; with `ffn_width`, every layer's FFN cut to its
        first ffn_width units (a MatFormer slice: gate/up rows and down
        columns, the sparsity cut over the kept units)."""
        c = self.c
        H, P, L, A = (c["hidden_size"], c["hidden_size_per_layer_input"],
                      c["num_hidden_layers"], c["altup_num_inputs"])
        a = c["altup_active_idx"]
        nq, nk, hd = (c["num_attention_heads"], c["num_key_value_heads"],
                      c["head_dim"])
        eps = c["rms_norm_eps"]
        B, T = ids.shape
        x0 = F.embedding(ids, self.w("embed_tokens.weight")) * math.sqrt(H)

        # Per-layer inputs.
        pid = torch.where(ids < c["vocab_size_per_layer_input"], ids,
                          torch.zeros_like(ids))
        y = F.embedding(pid, self.w("embed_tokens_per_layer.weight")) * math.sqrt(P)
        z = (x0 @ self.w("per_layer_model_projection.weight").t()) * H ** -0.5
        z = rms(z.view(B, T, L, P), eps, self.w("per_layer_projection_norm.weight"))
        pli = (z + y.view(B, T, L, P)) * 2 ** -0.5

        # AltUp streams.
        target = x0.pow(2).mean(-1, keepdim=True).sqrt()
        xs = [x0]
        for k in range(1, A):
            u = x0 @ self.w("altup_projections.%d.weight" % (k - 1)).t()
            xs.append(u * target / torch.sqrt(
                torch.clamp(u.pow(2).mean(-1, keepdim=True), min=1e-5)))
        xs = torch.stack(xs)  # [A, B, T, H]

        pos = torch.arange(T)
        causal = pos[None, :] <= pos[:, None]
        sliding = causal & (pos[:, None] - pos[None, :] < c["sliding_window"])
        kv = {}
        clip = c["altup_coef_clip"]
        for i in range(L):
            q_ = "layers.%d." % i
            W = lambda n: self.w(q_ + n)

            def route(v):
                return torch.tanh((rms(v, eps, W("altup.router_norm.weight")) / H)
                                  @ W("altup.modality_router.weight").t())

            m = route(xs[a])
            coef = (m @ W("altup.prediction_coefs.weight").t()).view(B, T, A, A)
            pred = xs + torch.einsum("btjs,sbth->jbth", coef, xs)
            act = pred[a]
            xn = rms(act, eps, W("input_layernorm.weight"))
            lau = xn + rms((xn @ W("laurel.linear_left.weight").t())
                           @ W("laurel.linear_right.weight").t(), eps,
                           W("laurel.post_laurel_norm.weight"))

            full = c["layer_types"][i] == "full_attention"
            theta = c["rope_theta"] if full else c["rope_local_base_freq"]
            q = (xn @ W("self_attn.q_proj.weight").t()).view(B, T, nq, hd)
            q = rope(rms(q, eps, W("self_attn.q_norm.weight")), theta)
            if self.kv_source[i] == i:
                k = (xn @ W("self_attn.k_proj.weight").t()).view(B, T, nk, hd)
                v = (xn @ W("self_attn.v_proj.weight").t()).view(B, T, nk, hd)
                k = rope(rms(k, eps, W("self_attn.k_norm.weight")), theta)
                v = rms(v, eps)
                kv[i] = (k, v)
            k, v = kv[self.kv_source[i]]
            rep = nq // nk
            k = k.repeat_interleave(rep, dim=2).transpose(1, 2)  # [B,nq,T,hd]
            v = v.repeat_interleave(rep, dim=2).transpose(1, 2)
            s = q.transpose(1, 2) @ k.transpose(-1, -2)  # scaling 1.0
            s = s.masked_fill(~(causal if full else sliding), float("-inf"))
            o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, nq * hd)
            att = rms(o @ W("self_attn.o_proj.weight").t(), eps,
                      W("post_attention_layernorm.weight"))
            x_attn = (act + att + lau) * 2 ** -0.5

            h = rms(x_attn, eps, W("pre_feedforward_layernorm.weight"))
            fw = ffn_width or c["intermediate_size"][i]
            g = h @ W("mlp.gate_proj.weight")[:fw].t()
            sp = c["activation_sparsity_pattern"][i]
            if sp > 0:
                mult = torch.distributions.Normal(0.0, 1.0).icdf(
                    torch.tensor(sp, dtype=torch.float32))
                cut = g.mean(-1, keepdim=True) + g.std(-1, keepdim=True,
                                                        unbiased=False) * mult
                g = torch.relu(g - cut)
            f = (gelu_tanh(g) * (h @ W("mlp.up_proj.weight")[:fw].t())) \
                @ W("mlp.down_proj.weight")[:, :fw].t()
            out = x_attn + rms(f, eps, W("post_feedforward_layernorm.weight"))

            m2 = route(out)
            wc = W("altup.correction_coefs.weight")
            if clip is not None:
                wc = torch.clamp(wc, -clip, clip)
            d = m2 @ wc.t() + 1.0  # [B, T, A]
            innov = out - pred[a]
            cor = pred + d.permute(2, 0, 1)[..., None] * innov[None]
            f0 = cor[a] * W("altup.correct_output_scale") \
                if c["altup_correct_scale"] else cor[a]
            pq = gelu_tanh(f0 @ W("per_layer_input_gate.weight").t()) * pli[:, :, i]
            r = rms(pq @ W("per_layer_projection.weight").t(), eps,
                    W("post_per_layer_input_norm.weight"))
            xs = torch.cat([cor[:1], cor[1:] + r[None]])

        tm = xs[0].pow(2).mean(-1, keepdim=True).sqrt()
        outs = [xs[0]]
        for k in range(1, A):
            u = xs[k] @ self.w("altup_unembed_projections.%d.weight" % (k - 1)).t()
            outs.append(u * tm / torch.sqrt(
                torch.clamp(u.pow(2).mean(-1, keepdim=True), min=1e-5)))
        hfin = rms(torch.stack(outs).mean(0), eps, self.w("norm.weight"))
        logits = hfin @ self.w("embed_tokens.weight").t()
        cap = c["final_logit_softcapping"]
        if cap:
            logits = cap * torch.tanh(logits / cap)
        return logits


# ----------------------------------------------------------------- export --

def bf16_round(t):
    return t.detach().to(torch.bfloat16).to(torch.float32)


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.bfloat16).contiguous()
        raw = t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def verify_export(model, out_dir, tokens, pccx_bin):
    """The project's float reference must reproduce torch's logits."""
    ids = torch.tensor([tokens])
    with torch.no_grad():
        want = model(ids)[0]
    dump = os.path.join(tempfile.mkdtemp(), "logits.bin")
    cmd = [os.path.join(pccx_bin, "pccx-reference"), out_dir, "--tokens",
           ",".join(map(str, tokens)), "--dump-logits", dump]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("pccx-reference failed on the export:\n" + r.stderr)
    import numpy
    got = torch.from_numpy(numpy.fromfile(dump, dtype="<f4")).view(len(tokens), -1)
    shutil.rmtree(os.path.dirname(dump))
    rng = (want.max(-1).values - want.min(-1).values)[:, None]
    rel = ((got - want).abs() / rng).max().item()
    top1 = (got.argmax(-1) == want.argmax(-1)).float().mean().item()
    print("export check: %d positions, max |reference - torch| / logit range "
          "= %.2e, top-1 agreement %.4f" % (len(tokens), rel, top1))
    if not rel < 1e-4:
        fail("the float reference disagrees with torch on the exported "
             "checkpoint (%.2e of the logit range > 1e-4)" % rel)
    return rel


def chat_check(model, sp, held, bos, eot, turns=4, limit=80):
    """Greedy replies to held-out verses, for the log: a reply should be
    verse-like text that ends with <end_of_turn> well before `limit`."""
    ended = 0
    with torch.no_grad():
        for ch in held[:turns]:
            # The open model turn: without its <end_of_turn> and "\n".
            ids = chat_ids(sp, "", [(ch[0], "")], bos)
            ids = ids[:len(ids) - 1 - len(sp.encode("\n"))]
            reply = []
            while len(reply) < limit:
                nxt = int(model(torch.tensor([ids + reply]))[0, -1].argmax())
                if nxt == eot:
                    ended += 1
                    break
                reply.append(nxt)
            print("chat check: %r -> %r (%d tokens%s)" % (
                ch[0][:40], sp.decode(reply)[:80], len(reply),
                ", ended" if len(reply) < limit else ""))
    print("chat check: %d of %d greedy replies ended by themselves"
          % (ended, turns))


def export(model, out_dir, spm_model):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(model.c, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"),
                      {"model." + n: model.w(n) for n in model.names})
    target = os.path.join(out_dir, "tokenizer.model")
    if not (os.path.exists(target) and os.path.samefile(spm_model, target)):
        shutil.copyfile(spm_model, target)


# ------------------------------------------------------------------- main --

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tools/demo-model",
                    help="checkpoint directory to write")
    ap.add_argument("--heldout", default="tools/demo-model/heldout.txt",
                    help="where to write the held-out text")
    ap.add_argument("--pccx-bin", default="build/bin",
                    help="directory holding pccx-reference")
    ap.add_argument("--steps", type=int, default=640)
    ap.add_argument("--tokenizer-model", default=None,
                    help="use this SentencePiece model instead of training "
                         "one (e.g. the committed tools/demo-model/"
                         "tokenizer.model)")
    ap.add_argument("--no-nested", dest="nested", action="store_false",
                    help="train the full FFN width only (no MatFormer "
                         "nesting)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chat-fraction", type=float, default=0.5,
                    help="share of each batch's rows that are conversations")
    ap.add_argument("--calibration", default="tools/demo-model/calibration.txt",
                    help="where to write the calibration text")
    ap.add_argument("--corpus-only", action="store_true",
                    help="write the held-out and calibration texts and stop")
    ap.add_argument("--work", default=None,
                    help="scratch directory (default: a temporary one)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    if not args.corpus_only and not os.access(os.path.join(args.pccx_bin, "pccx-reference"), os.X_OK):
        fail("%s/pccx-reference not found (build the project first or pass "
             "--pccx-bin)" % args.pccx_bin)
    work = args.work or tempfile.mkdtemp(prefix="demo-model-")
    os.makedirs(work, exist_ok=True)

    chapters, names = read_corpus()
    train = [ch for k, ch in enumerate(chapters) if k % HOLDOUT_EVERY != 50]
    train_names = [n for k, n in enumerate(names) if k % HOLDOUT_EVERY != 50]
    held = [ch for k, ch in enumerate(chapters) if k % HOLDOUT_EVERY == 50]
    os.makedirs(os.path.dirname(os.path.abspath(args.heldout)), exist_ok=True)
    with open(args.heldout, "w") as f:
        f.write("\n".join(" ".join(ch) for ch in held) + "\n")
    assert all(k % HOLDOUT_EVERY != 50 for k in CALIBRATION_CHAPTERS)
    with open(args.calibration, "w") as f:
        f.write("\n".join(" ".join(chapters[k])
                          for k in CALIBRATION_CHAPTERS) + "\n")
    if args.corpus_only:
        return
    verses = os.path.join(work, "verses.txt")
    with open(verses, "w") as f:
        f.write("\n".join(v for ch in train for v in ch) + "\n")
    print("corpus: %d training chapters (%d verses), %d held-out chapters "
          "(%d bytes)" % (len(train), sum(map(len, train)), len(held),
                          os.path.getsize(args.heldout)))

    if args.tokenizer_model:
        # Keep the committed tokenizer: the token ids the tests and the
        # documents use stay valid (spm_train's result varies by build).
        spm_model = args.tokenizer_model
    else:
        prefix = os.path.join(work, "tokenizer")
        subprocess.run(["spm_train", "--input=" + verses, "--model_prefix=" + prefix,
                        "--vocab_size=%d" % CONFIG["vocab_size"], "--model_type=bpe",
                        "--character_coverage=1.0", "--pad_id=0", "--eos_id=1",
                        "--bos_id=2", "--unk_id=3", "--minloglevel=2",
                        "--user_defined_symbols=%s,%s" % (START_OF_TURN, END_OF_TURN),
                        "--num_threads=1"],
                       check=True, capture_output=True)
        spm_model = prefix + ".model"
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_model)
    stream = [t for line in spm_ids(sp, [" ".join(ch) for ch in train])
              for t in line]
    held_ids = [t for line in spm_ids(sp, [" ".join(ch) for ch in held])
                for t in line]
    print("tokens: %d training, %d held-out" % (len(stream), len(held_ids)))
    data = torch.tensor(stream)
    bos = CONFIG["bos_token_id"]
    eot = sp.piece_to_id(END_OF_TURN)

    # Chat data: conversations from the training chapters, each opening
    # with BOS, in a random order; windows start at a conversation.
    convs = conversations(train, train_names, random.Random(args.seed))
    random.Random(args.seed + 1).shuffle(convs)
    chat, chat_starts = [], []
    for system, exchanges in convs:
        chat_starts.append(len(chat))
        chat += chat_ids(sp, system, exchanges, bos)
    chat_starts = [o for o in chat_starts if o + args.ctx < len(chat)]
    chat_data = torch.tensor(chat)
    n_chat = round(args.batch * args.chat_fraction)
    print("chat: %d conversations, %d exchanges, %d tokens; %d of %d rows "
          "a step" % (len(convs), sum(len(e) for _, e in convs), len(chat),
                      n_chat, args.batch))

    model = Gemma3nText(CONFIG)
    n_params = sum(p.numel() for p in model.params)
    print("model: %d parameters (%.1f MB in bf16)" % (n_params, n_params * 2e-6))
    decay = [p for n, p in zip(model.names, model.params)
             if p.dim() == 2 and "coefs" not in n]
    other = [p for n, p in zip(model.names, model.params)
             if not (p.dim() == 2 and "coefs" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    warm = max(1, args.steps // 20)

    # MatFormer training: each step trains one nested FFN width of every
    # layer (the prefix of its units), so that the smaller models inside
    # the checkpoint are models too (docs/matformer.md).
    full_width = CONFIG["intermediate_size"][0]
    widths = [full_width * k // 4 for k in (4, 2, 1)]
    width_weights = [0.5, 0.3, 0.2]
    width_rng = random.Random(args.seed + 2)

    def held_ppl(limit=64, width=None):
        model.eval()
        nll, n = 0.0, 0
        with torch.no_grad():
            for s in range(0, min(len(held_ids) - args.ctx, limit * (args.ctx - 1)),
                           args.ctx - 1):
                ids = torch.tensor([[bos] + held_ids[s:s + args.ctx - 1]])
                lg = model(ids, width)[0, :-1]
                nll += F.cross_entropy(lg, ids[0, 1:], reduction="sum").item()
                n += ids.shape[1] - 1
        model.train()
        return math.exp(nll / n)

    start = time.time()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / warm) * (
            0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        offs = torch.randint(0, len(stream) - args.ctx, (args.batch - n_chat,))
        rows = [data[o:o + args.ctx] for o in offs.tolist()]
        # A chat window's first target follows the conversation's BOS.
        rows += [chat_data[o + 1:o + 1 + args.ctx] for o in
                 random.sample(chat_starts, n_chat)]
        seq = torch.stack(rows)
        ids = torch.cat([torch.full((args.batch, 1), bos), seq[:, :-1]], 1)
        width = width_rng.choices(widths, width_weights)[0] \
            if args.nested else None
        logits = model(ids, width)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               seq.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.params, 1.0)
        opt.step()
        if step % 25 == 0 or step + 1 == args.steps:
            print("step %d/%d  loss %.3f  lr %.2e  %.0f s" %
                  (step, args.steps, loss.item(), lr, time.time() - start),
                  flush=True)
        if (step + 1) % 200 == 0 and step + 1 < args.steps:
            print("held-out ppl %.2f" % held_ppl(16), flush=True)
            if args.nested:
                for w in widths[1:]:
                    print("  FFN %d: held-out ppl %.2f" % (w, held_ppl(16, w)),
                          flush=True)

    # The exported weights are bf16: everything below uses the rounded ones.
    with torch.no_grad():
        for p in model.params:
            p.copy_(bf16_round(p))
    model.eval()
    print("training: %.0f s; held-out ppl (bf16 weights, torch) %.2f" %
          (time.time() - start, held_ppl(10 ** 9)))
    if args.nested:
        for w in widths[1:]:
            print("  every FFN cut to %d: held-out ppl %.2f" %
                  (w, held_ppl(10 ** 9, w)))
    chat_check(model, sp, held, bos, eot)
    export(model, args.out, spm_model)
    verify_export(model, args.out, [bos] + held_ids[:150], args.pccx_bin)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
