#!/usr/bin/python3
"""Simulated Python ranks at scale: the time to start N ranks (each with its own thread state and
fiber), rank-operations per second of an 8-byte all_reduce loop (numpy, data moved), and the
memory each rank costs (the growth of peak RSS over the interpreter with numpy and ranks loaded,
divided by N). One run per line, each in a fresh interpreter. The tensor is a numpy array, or
a torch tensor with `torch` (what an MMEngine program reduces; torch's export costs more).

    /usr/bin/python3 reports/python_sim.py WORLD_SIZE ITERATIONS [numpy|torch]
"""

import resource
import sys
import time

import numpy as np

import ranks.dist as dist
import ranks.sim


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main():
    world, iterations = int(sys.argv[1]), int(sys.argv[2])
    kind = sys.argv[3] if len(sys.argv) > 3 else "numpy"
    if kind == "torch":
        import torch
        make = lambda: torch.zeros(1, dtype=torch.float64)  # noqa: E731
    else:
        make = lambda: np.zeros(1)  # noqa: E731

    def body():
        x = make()
        for _ in range(iterations):
            dist.all_reduce(x)

    before = peak_rss_kib()
    start = time.perf_counter()
    report = ranks.sim.run(body, world_size=world, backend="gloo")
    elapsed = time.perf_counter() - start
    assert report.outcome == "ok", report.to_text()
    rate = world * iterations / elapsed / 1e6 if iterations else 0.0
    print(f"{world:6d} ranks x {iterations:5d} all_reduce ({kind:5s}): {elapsed:7.3f} s, "
          f"{rate:5.2f} M rank-ops/s, {(peak_rss_kib() - before) / world:5.1f} KiB per rank")


if __name__ == "__main__":
    main()
