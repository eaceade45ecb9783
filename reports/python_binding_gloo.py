#!/usr/bin/python3
"""The Python binding's cost per call on gloo, without torch in the processes: its threads (and
torch.distributed's own gloo group) share this two-vCPU machine with the loops, which widens
the gap python_overhead.py measures beside torch. Alternating rounds of an 8-byte all_reduce
from Python (ranks.dist on a numpy array) and from the C++ API in a C++ loop on the same array;
the slowest rank's time per call, median over the rounds.

    ranks run -n 2 -- /usr/bin/python3 reports/python_binding_gloo.py [--rounds 15] [--iters 500]
"""

import argparse
import statistics
import time

import numpy as np

import ranks._core as core
import ranks.dist as dist


def per_call(fn, iters):
    dist.barrier()
    start = time.perf_counter()
    fn(iters)
    elapsed = np.array([time.perf_counter() - start])
    dist.all_reduce(elapsed, op="max")
    return elapsed[0] / iters * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=500)
    args = parser.parse_args()
    dist.init_dist(dist.infer_launcher(), backend="gloo")
    small = np.zeros(2, dtype=np.float32)
    python, cpp = [], []
    for _ in range(args.rounds):
        python.append(per_call(lambda n: [dist.all_reduce(small) for _ in range(n)], args.iters))
        cpp.append(per_call(lambda n: core.cpp_all_reduce_loop(small, n), args.iters))
    if dist.get_rank() == 0:
        gaps = [p - c for p, c in zip(python, cpp)]
        print(f"# gloo, {dist.get_world_size()} processes, no torch, {args.rounds} alternating "
              f"rounds of {args.iters} calls, slowest rank")
        print(f"all_reduce 8 B: ranks.dist (Python)      median {statistics.median(python):7.1f} us"
              f"  min {min(python):7.1f}")
        print(f"all_reduce 8 B: ranks::all_reduce (C++)  median {statistics.median(cpp):7.1f} us"
              f"  min {min(cpp):7.1f}")
        print(f"Python over the C++ API, per round:      median {statistics.median(gaps):7.1f} us"
              f"  ({' '.join(f'{g:.0f}' for g in gaps)})")


if __name__ == "__main__":
    main()
