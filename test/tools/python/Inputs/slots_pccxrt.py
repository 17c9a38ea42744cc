"""Several sequences through pccxrt's slots: each slot's logits, stepped
together with the others, equal those of the same tokens decoded alone.

usage: slots_pccxrt.py BATCH_BUNDLE"""
import sys

import numpy as np
import pccxrt

path = sys.argv[1]
prompts = [[2, 100, 400, 37, 5], [2, 9], [2, 300, 301, 302]]
follow = [[11, 12, 13, 14], [21, 22, 23, 24], [31, 32, 33, 34]]

alone = []
with pccxrt.Model(path) as model:
    for prompt, more in zip(prompts, follow):
        model.reset()
        rows = [model.consume(prompt)[-1]]
        for token in more:
            rows.append(model.consume([token], decode_only=True)[0])
        alone.append(np.array(rows))

with pccxrt.Model(path) as model:
    print("batch rows", model.batch_rows, "slots", model.slots)
    model.reserve_slots(len(prompts))
    print("slots", model.slots)
    together = [[model.consume_slot(s, p)[-1]] for s, p in enumerate(prompts)]
    for step in range(len(follow[0])):
        logits = model.step([(s, follow[s][step]) for s in range(len(prompts))])
        for s in range(len(prompts)):
            together[s].append(logits[s])
    print("equal alone:", all(np.array_equal(a, np.array(t)) for a, t in zip(alone, together)))
    print("positions", [model.slot_position(s) for s in range(len(prompts))])
    # Rewind one slot two positions and decode them again: the same logits.
    model.rewind(1, model.slot_position(1) - 2)
    again = model.step([(1, follow[1][2]), (1, follow[1][3])])
    print("rewound and redone:", np.array_equal(again[-1], together[1][-1]))
    model.reset_slot(2)
    print("reset slot 2 at", model.slot_position(2))
    try:
        model.step([(7, 5)])
    except pccxrt.PccxrtError as e:
        print("refused:", e)
    try:
        model.rewind(0, 99)
    except pccxrt.PccxrtError as e:
        print("refused:", e)
