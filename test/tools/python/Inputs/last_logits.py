"""logits="last" against logits=True on the same prompt (two prefill steps
and a decode step).

usage: last_logits.py BUNDLE"""
import sys

import numpy as np
import pccxrt

prompt = list(range(2, 35))  # 33 tokens: 2 prefill steps of 16, 1 decode

with pccxrt.Model(sys.argv[1]) as model:
    every = model.consume(prompt)
    model.reset()
    last = model.consume(prompt, logits="last")
    print("last row equal", bool(np.array_equal(every[-1], last)))
    print("shape", last.shape)
    model.reset_slot(0)
    print("slot call equal", bool(np.array_equal(model.consume_slot(0, prompt, logits="last"), last)))
    try:
        model.consume([2], logits="first")
    except ValueError as e:
        print("bad value refused:", e)
