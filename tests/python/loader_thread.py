"""Each rank feeds its steps from a data-loader thread of its own (threading.Thread, pure Python
work that holds the GIL, handed over through a queue.Queue), and all-reduces each batch. Under the
simulator the loader threads must run as they do beside real processes (on fibers and on rank
threads alike), so the run ends with the same total as the real one; the total is also checked
against the sum worked out here by hand.

    ranks run -n 3 --backend gloo -- python3 loader_thread.py
    ranks sim -n 3 --backend gloo -- python3 loader_thread.py
"""

import queue
import threading

import numpy as np

import ranks.dist as dist

STEPS = 5

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
batches = queue.Queue(maxsize=2)


def loader():
    for step in range(STEPS):
        # Work in Python bytecode, GIL held; rank 0's loader is the slowest, so the others wait
        # for it in their all_reduce.
        busy = sum(i * i for i in range(20000 * (3 if rank == 0 else 1)))
        batches.put((step, busy))


thread = threading.Thread(target=loader, daemon=True)
thread.start()
total = 0.0
for _ in range(STEPS):
    step, _ = batches.get(timeout=60)
    value = np.array([10.0 * rank + step])
    dist.all_reduce(value)
    total += float(value[0])
thread.join()
expected = sum(10.0 * r + step for step in range(STEPS) for r in range(world))
assert total == expected, (total, expected)
if rank == 0:
    print(f"loader_thread: {world} ranks, total {total:g}")
