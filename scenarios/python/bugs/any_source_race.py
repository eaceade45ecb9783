"""Bug: rank 0 receives from any source and assumes rank 1's message comes first. FIFO
scheduling happens to deliver it first; some seeds deliver rank 2's first, and the assert fails.

    ranks sim -n 3 --backend gloo --seeds 1:20 -- python3 any_source_race.py  -> error
"""

import numpy as np

import ranks.dist as dist

dist.init_dist("pytorch", backend="gloo")
rank = dist.get_rank()
if rank == 0:
    first = np.zeros(1, dtype=np.int64)
    sender = dist.recv(first)  # any source
    assert first[0] == 1, f"expected rank 1's message first, got rank {sender}'s"  # @where:assert
    dist.recv(first)
else:
    dist.send(np.array([rank], dtype=np.int64), 0)
