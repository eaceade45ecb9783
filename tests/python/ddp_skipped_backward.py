"""DDP's classic hang, in a plain torch.distributed script: rank 1 skips backward() on step 1,
so the others wait forever in the all-reduce of their gradient bucket (with gloo, a real run
hangs until its timeout). `ranks sim` must name the backward() line where the others wait and
where rank 1 went instead."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
for step in range(2):
    loss = model(torch.ones(2, 4)).sum()
    if dist.get_rank() == 1 and step == 1:
        continue  # forgets backward() on this step
    loss.backward()  # line 16
dist.barrier()  # line 17
