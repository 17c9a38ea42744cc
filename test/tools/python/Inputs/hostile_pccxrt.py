"""pccxrt under hostile use: one model shared by threads (with a close
racing them), token ids beyond 32 bits, text with NUL, all-NaN logits."""
import sys
import threading

import numpy as np

import pccxrt

path = sys.argv[1]
model = pccxrt.Model(path)
prompt = model.tokenize("Hello there")
errors, results = [], []


def worker(seed):
    try:
        for _ in range(3):
            model.reset()
            ids = model.generate(prompt, max_new_tokens=4, temperature=0.8, seed=seed)
            results.append(len(ids))
            model.detokenize(ids)
    except pccxrt.PccxrtError as e:
        errors.append(str(e))


threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("threads: runs", len(results), "errors", len(errors))

# close() while other threads use the model: they get an error, no crash.
shared = pccxrt.Model(path)
stop = threading.Event()
closed_errors = []


def user():
    while not stop.is_set():
        try:
            shared.consume(prompt[:2])
            shared.reset()
        except pccxrt.PccxrtError as e:
            closed_errors.append(str(e))
            return


users = [threading.Thread(target=user) for _ in range(3)]
for t in users:
    t.start()
shared.close()
stop.set()
for t in users:
    t.join()
print("close while in use:", sorted(set(closed_errors)))

for bad in ([2**32 + 7], [-1], [2**31], [1.5], [[1, 2]]):
    try:
        model.consume(bad)
        print("accepted", bad)
    except (ValueError, TypeError) as e:
        print("ids refused:", type(e).__name__, e)
try:
    model.tokenize("a\0b")
    print("NUL accepted")
except ValueError as e:
    print("text refused:", e)
nan = np.full(model.vocab_size, np.nan, dtype=np.float32)
for row in (nan, np.full(model.vocab_size, -np.inf, dtype=np.float32)):
    try:
        print("sampled", model.sample(row))
    except pccxrt.PccxrtError as e:
        print("logits refused:", e)

# The readers race close() too (they read through the handle): an error,
# never a read of freed memory.
racing = pccxrt.Model(path)
reader_errors = []


def reader():
    try:
        while True:
            racing.slots, racing.batch_rows, racing.vocab_size, racing.capacity, racing.bos_token
    except pccxrt.PccxrtError as e:
        reader_errors.append(str(e))


readers = [threading.Thread(target=reader) for _ in range(3)]
for t in readers:
    t.start()
racing.close()
for t in readers:
    t.join()
print("readers after close:", sorted(set(reader_errors)))

# Integers that do not fit their C type are refused, not wrapped.
model.reserve_slots(2)
for call, args in (("consume_slot", (2**32 + 1, [2])), ("slot_position", (2**32,)),
                   ("reset_slot", (-2**31 - 1,)), ("rewind", (0, 2**63)),
                   ("reserve_slots", (2**32 + 2,)), ("step", ([(2**32 + 1, 2)],)),
                   ("sample", (np.zeros(model.vocab_size, dtype=np.float32), (), 0.0, 2**63)),
                   ("sample", (np.zeros(model.vocab_size, dtype=np.float32), (), 0.5, 0, 1.0, 1.0, 2**64))):
    try:
        getattr(model, call)(*args)
        print("accepted", call)
    except ValueError as e:
        print("refused:", call, e)
