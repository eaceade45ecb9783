"""A torch.distributed program on the backend "ranks" whose ranks disagree: rank 1 all-reduces
five elements by hand where the others' DDP all-reduces its bucket of four gradients. With
RANKS_DEBUG=detail every rank must fail with a Mismatch that names, for each side, this file's
line (the backward() line for DDP's bucket; not torch's distributed_c10d.py) and the counts."""

import torch
import torch.distributed as dist

if "ranks" not in dist.Backend.backend_list:
    import ranks.torch  # noqa: F401

dist.init_process_group("ranks")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))  # 4 parameters
if dist.get_rank() == 1:
    dist.all_reduce(torch.ones(5))  # line 15
else:
    model(torch.ones(2, 3)).sum().backward()  # line 17
print(f"rank {dist.get_rank()}: no mismatch was found", flush=True)
