"""A script whose rank 1 forks a child that goes on as if it were rank 1 (it reaches the next
collective instead of ending): the child must be stopped there with a message, and the run goes
on as the real one would, with the parent's own ranks."""

import os

import numpy as np

import ranks.dist as dist

dist.init_process_group("gloo")

values = np.ones(4, dtype=np.float32)
dist.all_reduce(values)
if dist.get_rank() == 1:
    pid = os.fork()
    if pid == 0:
        dist.all_reduce(values)  # the child's op
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(f"rank 1's child ended with status {os.waitstatus_to_exitcode(status)}", flush=True)
dist.all_reduce(values)
print(f"rank {dist.get_rank()} has {values[0]:g}", flush=True)
