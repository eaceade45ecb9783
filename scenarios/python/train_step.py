"""A data-parallel training step, as an MMEngine user writes it: every rank computes gradients on
its own shard, all_reduce averages them, each rank applies the update, and rank 0's parameters
are broadcast so that every replica provably holds the same weights. The twin of
scenarios/train_step.cpp.

    ranks sim -n 8 --backend gloo -- python3 train_step.py     (simulated, one process)
    torchrun --standalone --nproc_per_node 4 train_step.py      (real processes)
    ranks run -n 4 -- python3 train_step.py
"""

import torch

import ranks.dist as dist

PARAMS = 1024
STEPS = 3
LEARNING_RATE = 0.5


def local_gradient(rank, step):
    """This rank's gradient: a function of (rank, step, index), so the mean is known."""
    return torch.tensor([float(rank + step + i % 7) for i in range(PARAMS)])


def main():
    dist.init_dist("pytorch", backend="gloo")
    rank, world = dist.get_dist_info()
    params = torch.ones(PARAMS)
    for step in range(STEPS):
        grads = local_gradient(rank, step)
        dist.all_reduce(grads, op="mean")
        params -= LEARNING_RATE * grads
        dist.broadcast(params, src=0)

    # The expected parameters, from the closed form of the mean gradient.
    for i in range(PARAMS):
        expected = 1.0 - sum(LEARNING_RATE * ((world - 1) / 2 + step + i % 7)
                             for step in range(STEPS))
        if abs(params[i].item() - expected) > 1e-4:
            raise RuntimeError(f"rank {rank}: parameter {i} is {params[i].item()}, "
                               f"expected {expected}")
    dist.barrier()
    if dist.is_main_process():
        print(f"train_step.py: {world} ranks x {STEPS} steps, {PARAMS} parameters in sync")


if __name__ == "__main__":
    main()
