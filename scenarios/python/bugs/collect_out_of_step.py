"""Bug: collect_results called by only some ranks. Rank 1 skips evaluation (an empty shard
returned early), so the others wait in collect_results for a rank that went on to the barrier.

    ranks sim -n 4 --backend gloo -- python3 collect_out_of_step.py  -> mismatch
"""

import ranks.dist as dist

dist.init_dist("pytorch", backend="gloo")
rank, world = dist.get_dist_info()
shard = [] if rank == 1 else [rank * 10 + i for i in range(3)]


def evaluate(results):
    if not results:
        return None  # an early return that skips the collective on this rank only
    return dist.collect_results(results, 3 * world, device="gpu")  # @where:collect


evaluate(shard)
dist.barrier()  # @where:barrier
