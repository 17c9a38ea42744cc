"""Recomputes `pccx-run --perplexity --json` figures independently.

Usage: check_perplexity.py RESULT.json BUNDLE CKPT_DIR IDS_FILE
  IDS_FILE holds the text's token ids (spm_encode --output_format=id).
The windows are rebuilt from the rule --help documents (BOS + ctx - 1 text
tokens from w * stride; each token scored once, from the row before it, in
the first window that reaches it); every window is run with
`pccx-run --tokens --numerics reference --dump-logits` (the bundle) and
`pccx-reference --dump-logits` (the original weights), and perplexity, KL
and top-1 agreement are computed here in double and compared.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile


def rows(path, vocab):
    data = open(path, "rb").read()
    values = struct.unpack("<%df" % (len(data) // 4), data)
    return [values[i:i + vocab] for i in range(0, len(values), vocab)]


def log_softmax(row):
    hi = max(row)
    lse = hi + math.log(sum(math.exp(x - hi) for x in row))
    return [x - lse for x in row]


def main():
    result_path, bundle, ckpt, ids_path = sys.argv[1:5]
    result = json.load(open(result_path))
    ids = [int(t) for t in open(ids_path).read().split()]
    config = json.load(open(os.path.join(ckpt, "config.json")))
    vocab, bos = config["vocab_size"], config["bos_token_id"]
    ctx, stride = result["ctx"], result["stride"]
    tmp = tempfile.mkdtemp()
    nll, ref_nll, kl, agree, windows = [], [], [], 0, 0
    scored_up_to, begin = 0, 0
    while True:
        end = min(begin + ctx - 1, len(ids))
        first = max(scored_up_to, begin)
        tokens = ",".join(str(t) for t in [bos] + ids[begin:end])
        a, b = os.path.join(tmp, "a.bin"), os.path.join(tmp, "b.bin")
        subprocess.run(["pccx-run", bundle, "--tokens", tokens,
                        "--numerics", "reference", "--max-new-tokens", "1",
                        "--stop-tokens", "", "--dump-logits", a],
                       check=True, capture_output=True)
        subprocess.run(["pccx-reference", ckpt, "--tokens", tokens,
                        "--dump-logits", b], check=True, capture_output=True)
        got, ref = rows(a, vocab), rows(b, vocab)
        for j in range(first, end):
            lq, lp = log_softmax(got[j - begin]), log_softmax(ref[j - begin])
            nll.append(-lq[ids[j]])
            ref_nll.append(-lp[ids[j]])
            kl.append(sum(math.exp(p) * (p - q) for p, q in zip(lp, lq)))
            agree += lq.index(max(lq)) == lp.index(max(lp))
        windows += 1
        scored_up_to = end
        if end == len(ids):
            break
        begin += stride
    n = len(nll)
    want = {
        "tokens": n,
        "windows": windows,
        "ppl": math.exp(sum(nll) / n),
        "reference.ppl": math.exp(sum(ref_nll) / n),
        "reference.mean_kl": sum(kl) / n,
        "reference.top1_agreement": agree / n,
    }
    failures = []
    for key, value in want.items():
        node = result
        for part in key.split("."):
            node = node[part]
        if abs(node - value) > 1e-6 * max(1.0, abs(value)):
            failures.append("%s: tool %r, recomputed %r" % (key, node, value))
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)
    print("ok: %d tokens in %d windows, ppl %.4f" % (n, windows, want["ppl"]))


if __name__ == "__main__":
    main()
