"""MMEngine's dist helpers on a plain torch.distributed job, nothing of ranks in it: torchrun
runs it as processes, `ranks sim` as simulated ranks; both print the same line.

    torchrun --nproc_per_node 3 scenarios/python/mmengine_helpers.py
    ranks sim -n 3 --backend gloo -- python3 scenarios/python/mmengine_helpers.py
"""

import torch
import torch.distributed as torch_dist
from mmengine import dist


def main():
    # A CPU job: MMEngine's init_dist("pytorch") would pick a CUDA device first.
    torch_dist.init_process_group("gloo")
    rank, world = dist.get_dist_info()

    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)  # MMEngine's default op: sum
    assert total.item() == world * (world + 1) / 2, total

    mean = torch.tensor([float(rank)])
    dist.all_reduce(mean, op="mean")
    assert mean.item() == (world - 1) / 2, mean

    gathered = dist.all_gather(torch.tensor([rank * 10]))
    assert [t.item() for t in gathered] == [r * 10 for r in range(world)], gathered

    objects = dist.all_gather_object({"rank": rank, "name": f"r{rank}"})
    assert objects == [{"rank": r, "name": f"r{r}"} for r in range(world)], objects

    shared = [f"from rank {rank}", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(shared, src=0)
    assert shared == ["from rank 0", 0], shared

    seed = dist.sync_random_seed()
    seeds = dist.all_gather_object(seed)
    assert len(set(seeds)) == 1, seeds

    summed = {"loss": torch.tensor([float(rank)]), "acc": torch.tensor([2.0 * rank])}
    dist.all_reduce_dict(summed, op="sum")  # in place
    assert summed["loss"].item() == sum(range(world)), summed
    assert summed["acc"].item() == 2 * sum(range(world)), summed

    # 7 results split over the ranks as a DistributedSampler would (rank r takes r, r+world, ...).
    part = [i for i in range(7) if i % world == rank]
    results = dist.collect_results(part, 7, device="cpu")
    if rank == 0:
        assert results == list(range(7)), results
        print(f"mmengine_helpers: {world} ranks, sum {total.item():g}, seeds agree, "
              f"results {results}", flush=True)
    else:
        assert results is None, results
    dist.barrier()


if __name__ == "__main__":
    main()
