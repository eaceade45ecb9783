"""A plain torch.distributed DDP training script, nothing of ranks in it: torchrun runs it as
processes, `ranks sim` as simulated ranks, and both print the same final parameters.

    torchrun --nproc_per_node 4 scenarios/python/ddp_train.py
    ranks sim -n 4 --backend gloo -- python3 scenarios/python/ddp_train.py
"""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    assert local_rank == rank % int(os.environ["LOCAL_WORLD_SIZE"])

    torch.manual_seed(1234 + rank)  # different on every rank: DDP broadcasts rank 0's
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(3):
        # Each rank's own batch, from its rank and step alone.
        generator = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(4, 8, generator=generator)
        y = torch.randn(4, 2, generator=generator)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()

    total = torch.tensor([loss.item()])
    dist.all_reduce(total)
    checksum = sum(p.double().sum().item() for p in model.parameters())
    gathered = [None] * world
    dist.all_gather_object(gathered, round(checksum, 10))
    assert len(set(gathered)) == 1, gathered  # every rank holds the same parameters
    if rank == 0:
        print(f"ddp_train: {world} ranks, backend {dist.get_backend()}, "
              f"parameter checksum {checksum:.6f}, summed final loss {total.item():.5f}",
              flush=True)
    dist.barrier()  # torch's gloo can abort at exit if a rank destroys its group while a peer is still in one of its ops
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
