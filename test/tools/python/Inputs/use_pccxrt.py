"""The Python module over libpccxrt against pccx-run on the same bundle:
same logits (bit for bit), same greedy tokens, same text, and errors as
exceptions. usage: use_pccxrt.py BUNDLE SCRATCH_PREFIX"""
import subprocess
import sys

import numpy as np
import pccxrt

bundle, scratch = sys.argv[1], sys.argv[2]
print("library:", pccxrt.library_path().endswith("libpccxrt.so"))

with pccxrt.Model(bundle, numerics="reference") as model:
    print("vocab", model.vocab_size, "capacity", model.capacity,
          "bos", model.bos_token, "eos", model.eos_tokens)
    ids = model.tokenize("Hello there")
    print("tokenize: bos first", ids[0] == model.bos_token,
          "round trip", repr(model.detokenize(ids[1:])))
    logits = model.consume(ids)
    print("logits", type(logits).__name__, logits.dtype, logits.shape, "position", model.position)

    # pccx-run on the same tokens writes the same rows.
    text_ids = ",".join(map(str, ids))
    subprocess.run(["pccx-run", bundle, "--tokens", text_ids, "--numerics", "reference",
                    "--max-new-tokens", "1", "--dump-logits", scratch + ".bin"],
                   check=True, capture_output=True, timeout=60)
    dumped = np.fromfile(scratch + ".bin", dtype=np.float32).reshape(logits.shape)
    print("logits equal pccx-run's:", np.array_equal(dumped, logits))

    # Greedy generation equals pccx-run's.
    model.reset()
    streamed, texts = [], []
    generated = model.generate(ids, max_new_tokens=10, stop_tokens=[], on_token=streamed.append,
                               on_text=texts.append)
    run = subprocess.run(["pccx-run", bundle, "--tokens", text_ids, "--numerics", "reference",
                          "--max-new-tokens", "10", "--stop-tokens", ""],
                         check=True, capture_output=True, text=True, timeout=60)
    print("generate equals pccx-run:", generated == [int(t) for t in run.stdout.strip().split(",")],
          "streamed:", streamed == generated, "position", model.position)
    print("streamed text:", all(isinstance(t, str) for t in texts),
          "".join(texts) == model.detokenize(generated))

    # Sampling is reproducible with a seed.
    model.reset()
    a = model.generate("Hello there", max_new_tokens=6, stop_tokens=[], temperature=0.9, seed=5)
    model.reset()
    b = model.generate("Hello there", max_new_tokens=6, stop_tokens=[], temperature=0.9, seed=5)
    print("seeded sampling repeats:", a == b)

    # Errors are exceptions with the runtime's message.
    try:
        model.consume([99999])
    except pccxrt.PccxrtError as e:
        print("error:", e)
    try:
        model.sample(logits[-1], temperature=-1)
    except pccxrt.PccxrtError as e:
        print("error:", e)

try:
    pccxrt.Model(scratch + ".missing.pccx")
except pccxrt.PccxrtError as e:
    print("open error:", "missing.pccx" in str(e))

# Devices come from the runtime's registry, opened by name with their own
# options as keywords; what a device refuses is named.
print("devices:", list(pccxrt.devices()), "kv260 described:", "KV260" in pccxrt.devices()["kv260"])
with pccxrt.Model(bundle, device="sim", numerics="reference", threads=2) as model:
    print("threads=2 logits equal:", np.array_equal(model.consume(ids), logits))
for device, options in [("gpu", {}), ("sim", {"numerics": "fast"}), ("sim", {"uio_name": "x"}),
                        ("kv260", {"numerics": "reference"})]:
    try:
        pccxrt.Model(bundle, device=device, **options)
    except pccxrt.PccxrtError as e:
        print("refused:", e)
try:
    pccxrt.Model(bundle, threads="1,numerics=reference")
except ValueError as e:
    print("refused:", e)
