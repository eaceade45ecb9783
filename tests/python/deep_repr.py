"""Rank 1 overflows its C stack: a __repr__ that calls repr() of itself recurses through C code,
which Python 3.11's recursion limit (raised here) does not bound. On rank threads the report must
say that rank 1 overflowed its thread's stack, not only that it died on SIGSEGV."""

import sys

import torch.distributed as dist

dist.init_process_group("gloo")
sys.setrecursionlimit(10**8)


class Deep:
    def __repr__(self):
        return repr(self)


if dist.get_rank() == 1:
    repr(Deep())
dist.barrier()
