"""Structured output from Python: Model.generate(json_schema=...) and a
JsonConstraint driven by hand give replies that parse and validate (the
subset's validator of the pccx-run tests), and a schema beyond the subset
is refused naming the keyword.

usage: structured_pccxrt.py BUNDLE"""
import json
import os
import sys

import numpy as np
import pccxrt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "pccx-run", "Inputs"))
from json_subset import SCHEMAS, validates  # noqa: E402

with pccxrt.Model(sys.argv[1]) as model:
    stops = set(model.eos_tokens)
    for name in ["person", "scalar"]:
        ids = model.generate("Answer in JSON:", max_new_tokens=160, json_schema=SCHEMAS[name],
                             temperature=1.0, seed=7)
        model.reset()
        ended = ids[-1] in stops
        text = model.detokenize([i for i in ids if i not in stops])
        print(name, "ended", ended, "valid", ended and validates(json.loads(text), SCHEMAS[name]))
    ids = model.generate("x", max_new_tokens=160, json_schema=True, temperature=1.0, seed=3)
    model.reset()
    text = model.detokenize([i for i in ids if i not in stops])
    print("any object", ids[-1] in stops and isinstance(json.loads(text), dict))

    # By hand: the mask leaves the chosen token finite, and the constraint
    # says when the document is complete.
    constraint = model.json_constraint({"enum": ["yes", "no"]})
    logits = model.consume(model.tokenize("x"), logits="last")
    out = []
    while not constraint.complete:
        constraint.mask(logits)
        token = int(np.argmax(logits))
        constraint.accept(token)
        out.append(token)
        logits = model.consume([token], logits="last")
    print("by hand", json.loads(model.detokenize(out)) in ["yes", "no"])
    try:
        constraint.accept(out[0])
    except pccxrt.PccxrtError as error:
        print("refused token:", error)
    try:
        model.json_constraint({"type": "string", "format": "email"})
    except pccxrt.PccxrtError as error:
        print("refused schema:", error)

    # One constraint shared by threads: its calls take turns. Each thread
    # masks a row of its own and tries tokens; without the lock the C
    # object's state was written by several threads at once (heap
    # corruption within seconds).
    import threading
    shared = model.json_constraint({"type": "object", "properties": {
        "text": {"type": "string", "maxLength": 64}}, "required": ["text"]})
    vocab = model.vocab_size
    failures = []

    def hammer(seed):
        rng = np.random.default_rng(seed)
        rows = [rng.standard_normal(vocab).astype(np.float32) for _ in range(8)]
        try:
            for i in range(3000):
                row = rows[i % 8].copy()
                try:
                    shared.mask(row)
                    shared.accept(int(np.argmax(row)))
                except pccxrt.PccxrtError:
                    pass
                _ = shared.complete
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(repr(error))

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("shared by threads", failures == [])
    shared.close()
    try:
        shared.mask(np.zeros(vocab, dtype=np.float32))
    except pccxrt.PccxrtError as error:
        print("closed:", error)
