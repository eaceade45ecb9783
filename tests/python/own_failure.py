"""A real job in which rank 1 fails for a reason of its own after the first collective, while
the others go on into the next one and lose it: rank 1 must exit 1 and be blamed, the others
exit 75 (they only saw rank 1's failure) and name it as the job's first failure."""

import numpy as np

import ranks.dist as dist

dist.init_process_group("gloo")
values = np.ones(4, dtype=np.float32)
dist.all_reduce(values)
if dist.get_rank() == 1:
    raise ValueError("rank 1's own bug")  # the first failure
dist.all_reduce(values)
print("unreachable: rank 1 never joins the second all_reduce")
