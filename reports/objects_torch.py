#!/usr/bin/python3
"""The torch.distributed side of reports/objects.md: the same data as tests/bench/objects_bench.cpp
through torch's all_gather_object (backend gloo), and collect_results as MMEngine does it
(shared/research/mmengine_dist.md section 7: device "gpu" all-gathers every part and rank 0
interleaves; device "cpu" pickles parts into a shared directory, barrier, rank 0 loads them).
MMEngine itself is not a Debian package, so its two paths are written out here, following that
description. Needs Debian's python3-torch (apt-get install python3-torch).

    /usr/bin/python3 reports/objects_torch.py [--world 2] [--entries 10000] [--floats 8]
        [--records 100000] [--iters 20]

Prints, on rank 0, the median time per call (the slowest rank's), MB/s of pickled bytes moved and
the growth of the process's peak RSS during the calls: the columns objects_bench prints.
"""
import argparse
import os
import pickle
import resource
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def median_ms(iters, call):
    call()
    call()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    t = torch.tensor([statistics.median(times)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def report(what, ms, nbytes, rss_before):
    if dist.get_rank() != 0:
        return
    grow = (peak_rss_kib() - rss_before) / 1024
    print(f"{what:<44} {ms:9.3f} ms {nbytes / (ms * 1e-3) / 1e6:10.1f} MB/s   peak RSS +{grow:.1f} MiB",
          flush=True)


def interleave(parts, size):
    # MMEngine after PR #1469: zip_longest, drop None, truncate.
    out = []
    for i in range(max(len(p) for p in parts)):
        for p in parts:
            if i < len(p) and p[i] is not None:
                out.append(p[i])
    return out[:size]


def collect_gpu(part, size):
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, part)
    return interleave(parts, size) if dist.get_rank() == 0 else None


def collect_cpu(part, size):
    rank, world = dist.get_rank(), dist.get_world_size()
    dir_tensor = torch.full((512,), 32, dtype=torch.uint8)
    if rank == 0:
        os.makedirs(".dist_test", exist_ok=True)
        tmpdir = tempfile.mkdtemp(dir=".dist_test")
        encoded = bytearray(tmpdir.encode())
        dir_tensor[:len(encoded)] = torch.tensor(encoded, dtype=torch.uint8)
    dist.broadcast(dir_tensor, 0)
    tmpdir = dir_tensor.numpy().tobytes().decode().rstrip()
    with open(os.path.join(tmpdir, f"part_{rank}.pkl"), "wb") as f:
        pickle.dump(part, f, protocol=2)
    dist.barrier()
    if rank != 0:
        return None
    parts = []
    for i in range(world):
        with open(os.path.join(tmpdir, f"part_{i}.pkl"), "rb") as f:
            parts.append(pickle.load(f))
    shutil.rmtree(tmpdir)
    return interleave(parts, size)


def body(rank, args, init):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=args.world)
    n = args.world
    if rank == 0:
        print(f"# torch {torch.__version__} backend gloo, {n} ranks, {args.iters} timed calls after "
              "2 warm-up calls", flush=True)
    wanted = lambda name: args.op in ("all", name)
    out = [None] * n
    if wanted("metrics"):
        metrics = {f"k{i}": [0.5 * i] * args.floats for i in range(args.entries)}
        rss = peak_rss_kib()
        ms = median_ms(args.iters, lambda: dist.all_gather_object(out, metrics))
        report(f"all_gather_object dict[str,list[float]] {args.entries}", ms,
               len(pickle.dumps(metrics)) * n, rss)
    if wanted("anchor"):
        anchor = {f"k{i}": i for i in range(args.entries)}
        rss = peak_rss_kib()
        ms = median_ms(args.iters, lambda: dist.all_gather_object(out, anchor))
        report(f"all_gather_object dict[str,int] {args.entries}", ms,
               len(pickle.dumps(anchor)) * n, rss)

    part = [(i, 0.25 * i, i % 80) for i in range(rank, args.records, n)]
    for device, collect in (("gpu", collect_gpu), ("cpu", collect_cpu)):
        if not wanted("collect-" + device):
            continue
        rss = peak_rss_kib()
        ms = median_ms(args.iters, lambda: collect(part, args.records))
        report(f'collect_results(device="{device}") {args.records} records', ms,
               len(pickle.dumps(part)) * n, rss)
        got = collect(part, args.records)
        if rank == 0 and [r[0] for r in got] != list(range(args.records)):
            sys.exit("collect returned the records out of order")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--entries", type=int, default=10000)
    p.add_argument("--floats", type=int, default=8)
    p.add_argument("--records", type=int, default=100000)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--op", default="all", help="metrics | anchor | collect-gpu | collect-cpu | all")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        init = "file://" + os.path.join(scratch, "store")
        mp.spawn(body, args=(args, init), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
