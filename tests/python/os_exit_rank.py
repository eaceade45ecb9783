"""Rank 0 fails on its own (a ValueError after its all_reduce); rank 1 then ends the process
with os._exit(3). Under `ranks sim` the report must name rank 1's exit, and still give rank 0's
failure as the run's first; the interpreter must end without threading's complaint about its
main thread (the script's own imports run on the ranks' thread states)."""

import os

import numpy

import ranks.dist as dist

dist.init_dist("pytorch", backend="gloo")
data = numpy.ones(4)
dist.all_reduce(data)  # line 14
if dist.get_rank() == 0:
    raise ValueError("rank 0 gives up after its all_reduce")
dist.sleep(1.0)  # virtual time: rank 0 fails first
os._exit(3)  # line 18
