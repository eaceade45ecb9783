#!/usr/bin/python3
"""all_gather of tensors as MMEngine calls it: the gathered pieces are new tensors each call.
ranks.dist.all_gather(data) against torch.distributed.all_gather into a fresh list of
torch.empty_like tensors (what mmengine.dist.all_gather does), in the same processes, rounds
alternating; the slowest rank's median time per call, and the page faults per call of rank 0.

    ranks run -n 2 -- /usr/bin/python3 reports/python_all_gather.py [--rounds 5]
    RANKS_BACKEND=mpi mpirun -np 2 /usr/bin/python3 reports/python_all_gather.py --backend mpi

torch.distributed runs over gloo in both (Debian's torch has no MPI backend), on its own store
at MASTER_PORT + 1.
"""

import argparse
import resource
import statistics
import time

import torch
import torch.distributed as td

import ranks.dist as dist
from python_overhead import join_both


def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def per_call(fn, iters):
    fn()  # the first call of a size allocates what later ones reuse
    dist.barrier()
    before = faults()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    faulted = faults() - before
    dist.all_reduce(elapsed, op="max")
    return elapsed.item() / iters, faulted / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", default="gloo", choices=["gloo", "mpi"])
    args = parser.parse_args()

    rank, world = join_both(args.backend)  # reports/python_overhead.py

    def torch_all_gather(data):
        pieces = [torch.empty_like(data) for _ in range(world)]
        td.all_gather(pieces, data)
        return pieces

    loops = {}
    for label, numel, iters in (("8 B", 2, 500), ("128 KiB", 32 << 10, 200), ("4 MiB", 1 << 20, 20)):
        data = torch.full((numel,), float(rank))
        loops[f"all_gather {label}: ranks.dist"] = (lambda d=data: dist.all_gather(d), iters)
        loops[f"all_gather {label}: torch.distributed"] = (lambda d=data: torch_all_gather(d), iters)
    samples = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, (fn, iters) in loops.items():
            samples[name].append(per_call(fn, iters))
    if rank == 0:
        print(f"# ranks.dist over {args.backend}, torch.distributed over gloo, {world} processes, "
              f"{args.rounds} rounds; median per call of the slowest rank, page faults per call")
        for name, runs in samples.items():
            seconds = statistics.median(t for t, _ in runs)
            faulted = statistics.median(f for _, f in runs)
            print(f"{name:40s} {seconds * 1e6:10.1f} us  {faulted:7.1f} faults")
    td.destroy_process_group()


if __name__ == "__main__":
    main()
