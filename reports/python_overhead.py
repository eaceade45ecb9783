#!/usr/bin/python3
"""What the Python package costs over the C++ API, and against torch.distributed, in one run of
the same processes: every rank initialises ranks.dist (gloo) and torch.distributed (gloo, its own
store on MASTER_PORT + 1), then alternates rounds of the same loops and reports, on rank 0, each
loop's median time per call over the rounds:

  - all_reduce of 8 bytes (2 x float32, in place): ranks.dist.all_reduce, the C++ API's
    ranks::all_reduce in a C++ loop on the same tensor, torch.distributed.all_reduce;
  - all_gather_object of two 10,000-entry dicts, ranks.dist vs torch.distributed: the anchors'
    dict {"k<i>": i} (../shared/anchors/torch_allreduce.py measured torch on it), and one of
    str -> list of 8 floats (C++'s object workload, reports/objects.md).

    ranks run -n 2 -- /usr/bin/python3 reports/python_overhead.py [--rounds 7] [--iters 2000]
    RANKS_BACKEND=mpi mpirun -np 2 /usr/bin/python3 reports/python_overhead.py --backend mpi

With --backend mpi, ranks.dist runs over Open MPI and torch.distributed still over gloo (Debian's
torch has no MPI backend), on 127.0.0.1:29650 unless MASTER_ADDR/MASTER_PORT say otherwise.
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as td

import ranks._core as core
import ranks.dist as dist


def per_call(fn, iters):
    fn(2)  # warm-up calls, as the anchors' torch benchmark makes: the round before ran other loops
    dist.barrier()
    start = time.perf_counter()
    fn(iters)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op="max")  # the slowest rank's
    return elapsed.item() / iters


def join_both(backend):
    """Joins the job with ranks.dist (over ``backend``) and torch.distributed (over gloo, its own
    store on MASTER_PORT + 1, as the same processes): (rank, world size)."""
    dist.init_dist(dist.infer_launcher(), backend=backend)
    rank, world = dist.get_dist_info()
    port = int(os.environ.get("MASTER_PORT", "29649")) + 1
    address = os.environ.get("MASTER_ADDR", "127.0.0.1")
    td.init_process_group("gloo", init_method=f"tcp://{address}:{port}", rank=rank,
                          world_size=world)
    return rank, world


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--object-iters", type=int, default=10)
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--backend", default="gloo", choices=["gloo", "mpi"])
    args = parser.parse_args()

    rank, world = join_both(args.backend)

    small = torch.zeros(2)
    anchor = {f"k{i}": i for i in range(args.entries)}
    metrics = {f"k{i}": [0.5 * i + j for j in range(8)] for i in range(args.entries)}
    out = [None] * world

    def torch_objects(payload):
        def loop(n):
            for _ in range(n):
                td.all_gather_object(out, payload)
        return loop

    def ranks_objects(payload):
        def loop(n):
            for _ in range(n):
                dist.all_gather_object(payload)
        return loop

    loops = {
        "all_reduce 8 B: ranks.dist (Python)": (
            lambda n: [dist.all_reduce(small) for _ in range(n)], args.iters),
        "all_reduce 8 B: ranks::all_reduce (C++ loop)": (
            lambda n: core.cpp_all_reduce_loop(small, n), args.iters),
        "all_reduce 8 B: torch.distributed": (
            lambda n: [td.all_reduce(small) for _ in range(n)], args.iters),
        f"all_gather_object anchor dict {args.entries}: ranks.dist": (
            ranks_objects(anchor), args.object_iters),
        f"all_gather_object anchor dict {args.entries}: torch.distributed": (
            torch_objects(anchor), args.object_iters),
        f"all_gather_object floats dict {args.entries}: ranks.dist": (
            ranks_objects(metrics), args.object_iters),
        f"all_gather_object floats dict {args.entries}: torch.distributed": (
            torch_objects(metrics), args.object_iters),
    }
    times = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, (fn, iters) in loops.items():
            times[name].append(per_call(fn, iters))
    if rank == 0:
        print(f"# ranks.dist over {args.backend}, torch.distributed over gloo, {world} processes, "
              f"{args.rounds} rounds, median per call of the slowest rank")
        for name, samples in times.items():
            print(f"{name:55s} {statistics.median(samples) * 1e6:12.1f} us"
                  f"  (min {min(samples) * 1e6:.1f}, max {max(samples) * 1e6:.1f})")
        median = {name: statistics.median(samples) for name, samples in times.items()}
        names = list(median)
        print(f"{'Python over the C++ API (all_reduce 8 B)':55s} "
              f"{(median[names[0]] - median[names[1]]) * 1e6:12.1f} us")
        print(f"{'torch / ranks.dist (all_gather_object, anchor dict)':55s} "
              f"{median[names[4]] / median[names[3]]:12.2f} x")
        print(f"{'torch / ranks.dist (all_gather_object, floats dict)':55s} "
              f"{median[names[6]] / median[names[5]]:12.2f} x")
    td.destroy_process_group()


if __name__ == "__main__":
    main()
