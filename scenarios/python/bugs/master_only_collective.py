"""Bug: a collective inside a @master_only function. Only rank 0 enters the all_reduce; the
others go on to the barrier, so rank 0's all_reduce meets their barrier.

    ranks sim -n 4 --backend gloo -- python3 master_only_collective.py  -> mismatch at seq 0
"""

import torch

import ranks.dist as dist

dist.init_dist("pytorch", backend="gloo")
metric = torch.tensor([0.5])


@dist.master_only
def log_metrics():
    dist.all_reduce(metric, op="mean")  # @where:master
    print("mean metric", metric.item())


log_metrics()
dist.barrier()  # @where:barrier
