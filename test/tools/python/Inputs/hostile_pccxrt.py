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
