"""MMEngine imported by the ranks themselves (after the run began): its ManagerMixin instances are
still each rank's own under `ranks sim`, as in each process of a real job."""

import torch.distributed as dist
dist.init_process_group("gloo")
from mmengine.logging import MessageHub
rank = dist.get_rank()
hub = MessageHub.get_instance(f"hub{rank}")
dist.barrier()
assert MessageHub.get_current_instance().instance_name == f"hub{rank}", MessageHub.get_current_instance().instance_name
assert not MessageHub.check_instance_created(f"hub{(rank + 1) % dist.get_world_size()}")
if rank == 0: print("hub: each rank's own", flush=True)
