"""Code before init_process_group runs as in a real process: not distributed (rank 0 of 1, not
initialized, a collective leaves its data as it is), and distributed from the script's own
init_process_group on. Simulated and real, the same numbers.

    ranks run -n 3 --backend gloo -- python3 before_init.py
    ranks sim -n 3 --backend gloo -- python3 before_init.py
"""

import numpy as np

import ranks.dist as dist

before = np.ones(1)
dist.all_reduce(before)  # not distributed yet: the data stays as it is
seen = (dist.get_rank(), dist.get_world_size(), dist.is_initialized())
dist.init_process_group("gloo")
after = np.ones(1)
dist.all_reduce(after)
assert seen == (0, 1, False), seen
assert before[0] == 1 and after[0] == dist.get_world_size(), (before, after)
if dist.get_rank() == 0:
    print(f"before_init: before {before[0]:g}, after {after[0]:g}, world {dist.get_world_size()}")
