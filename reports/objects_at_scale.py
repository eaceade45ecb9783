"""One small object per rank through the object collectives at scale, simulated: seconds for the
whole run (2,048 empty ranks start and end in about 0.05 s: the `none` line) and the process's
peak resident memory, each case in a fresh process.

    PYTHONPATH=$PWD/build/python python3 reports/objects_at_scale.py [RANKS]    (default 2048)
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

CASES = ["none", "gather_object", "all_gather_object", "collect_results_gpu",
         "collect_results_cpu"]


def body(case, n):
    import ranks.dist as dist

    rank = dist.get_rank()
    if case == "gather_object":
        out = dist.gather_object({"rank": rank}, dst=0)
        assert rank != 0 or [o["rank"] for o in out] == list(range(n))
    elif case == "all_gather_object":
        out = dist.all_gather_object({"rank": rank})
        assert out[n - 1]["rank"] == n - 1
    elif case.startswith("collect_results"):
        out = dist.collect_results([rank], n, case.rsplit("_", 1)[1])
        assert rank != 0 or out == list(range(n))


def one(case, n):
    import ranks.sim

    start = time.perf_counter()
    ranks.sim.run(lambda: body(case, n), world_size=n)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{case:22s} {n:6d} ranks  {seconds:6.2f} s  peak {peak:6.0f} MiB", flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]))
        return
    n = sys.argv[1] if len(sys.argv) > 1 else "2048"
    with tempfile.TemporaryDirectory() as scratch:  # collect_results("cpu") writes ./.dist_test
        for case in CASES:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case, n],
                           cwd=scratch, check=True)


if __name__ == "__main__":
    main()
