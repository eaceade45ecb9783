"""A torch.distributed script whose rank 1 waits for something no rank will ever do, by means the
simulator cannot see (it polls for a file in real time). `ranks sim --timeout 1` must end the run
with a timeout that names rank 1, its last op and the line it is at now."""

import os
import time

import torch
import torch.distributed as dist


def wait_for_file(path):  # the loop is one line: wherever the timeout finds rank 1, it is there
    while not os.path.exists(path): time.sleep(0.01)  # noqa: E701 (the line rank 1 is at)


dist.init_process_group("gloo")
dist.all_reduce(torch.ones(1))
if dist.get_rank() == 1:
    wait_for_file("/nonexistent/ranks-busy-rank-flag")
dist.barrier()
