#!/usr/bin/python3
"""Simulated Python ranks at scale: the time to start N ranks (each with its own thread state and
fiber), rank-operations per second of an 8-byte all_reduce loop (numpy, data moved), and the
memory each rank costs (the growth of peak RSS over the interpreter with numpy and ranks loaded,
divided by N). One run per line, each in a fresh interpreter.

    /usr/bin/python3 reports/python_sim.py WORLD_SIZE ITERATIONS
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

    def body():
        x = np.zeros(1)
        for _ in range(iterations):
            dist.all_reduce(x)

    before = peak_rss_kib()
    start = time.perf_counter()
    report = ranks.sim.run(body, world_size=world, backend="gloo")
    elapsed = time.perf_counter() - start
    assert report.outcome == "ok", report.to_text()
    rate = world * iterations / elapsed / 1e6 if iterations else 0.0
    print(f"{world:6d} ranks x {iterations:5d} all_reduce: {elapsed:7.3f} s, "
          f"{rate:5.2f} M rank-ops/s, {(peak_rss_kib() - before) / world:5.1f} KiB per rank")


if __name__ == "__main__":
    main()
