"""A model loaded before fork() works in the child (Python's multiprocessing
forks by default on Linux): the child's first step starts worker threads of
its own, its logits are the parent's, and it exits without waiting for the
parent's threads. Every wait is bounded."""
import multiprocessing
import sys

import numpy as np

import pccxrt

path = sys.argv[1]
model = pccxrt.Model(path, threads=2)
# 16 rows through the LM head pass the size at which GEMMs are split.
prompt = [2] + list(range(100, 120))
parent = model.consume(prompt)
model.reset()


def child(queue):
    logits = model.consume(prompt)
    ids = model.generate([2, 7, 7, 7], max_new_tokens=4)
    model.close()
    queue.put((bool(np.array_equal(logits, parent)), len(ids)))


context = multiprocessing.get_context("fork")
queue = context.Queue()
process = context.Process(target=child, args=(queue,))
process.start()
process.join(60)
if process.is_alive():
    process.kill()
    print("child: hung")
    sys.exit(1)
print("child: exit", process.exitcode, "same logits, tokens:", queue.get(timeout=5))
# The parent's pool is untouched by the child.
print("parent again:", bool(np.array_equal(model.consume(prompt), parent)))
model.close()
