"""A script whose rank 1 computes forever after its first collective while the others wait in
the second: what a run looks like when a CI system's time limit stops it. Rank 1 says so on
stdout before it starts, so that whoever stops the run knows it is under way."""

import sys
import time

import numpy as np

import ranks.dist as dist

dist.init_process_group("gloo")

values = np.ones(4, dtype=np.float32)
dist.all_reduce(values)
if dist.get_rank() == 1:
    print("rank 1 is computing", flush=True)
    # One line for the whole loop: the jump back belongs to the loop's line, so wherever the
    # interruption finds rank 1 it is on this one.
    while True: time.sleep(0.001)  # noqa: E701 (the line rank 1 is at)
dist.all_reduce(values)  # where the others wait
sys.exit("unreachable: rank 1 never joins the second all_reduce")
