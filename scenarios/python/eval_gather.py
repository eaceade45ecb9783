"""An evaluation step, as MMEngine's evaluator runs it: the dataset is sharded round-robin (as
DistributedSampler does, so shards differ in size by one), each rank scores its shard, and
collect_results brings every prediction back to rank 0 in dataset order; the number of correct
answers is also all_reduced, and the two figures must agree. The twin of
scenarios/eval_gather.cpp.

    ranks sim -n 8 --backend gloo -- python3 eval_gather.py
"""

import torch

import ranks.dist as dist

SAMPLES = 1001


def predict(sample):
    """The "model": right on samples whose index is not divisible by 3."""
    return -1 if sample % 3 == 0 else sample % 10


def label(sample):
    return sample % 10


def main():
    dist.init_dist("pytorch", backend="gloo")
    rank, world = dist.get_dist_info()
    mine = list(range(rank, SAMPLES, world))
    results = [{"sample": s, "prediction": predict(s)} for s in mine]
    correct = torch.tensor([sum(predict(s) == label(s) for s in mine)], dtype=torch.int64)

    collected = dist.collect_results(results, SAMPLES, device="gpu")
    dist.all_reduce(correct)
    if rank != 0:
        assert collected is None
        return
    if [r["sample"] for r in collected] != list(range(SAMPLES)):
        raise RuntimeError("predictions out of order")
    from_gather = sum(r["prediction"] == label(r["sample"]) for r in collected)
    expected = sum(1 for s in range(SAMPLES) if s % 3 != 0)
    if from_gather != expected or correct.item() != expected:
        raise RuntimeError(f"accuracy disagrees: gathered {from_gather}, all_reduced "
                           f"{correct.item()}, expected {expected}")
    print(f"eval_gather.py: {world} ranks, {SAMPLES} samples, accuracy {expected / SAMPLES:.4f}")


if __name__ == "__main__":
    main()
