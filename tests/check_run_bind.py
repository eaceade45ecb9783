#!/usr/bin/env python3
"""`ranks run --bind-to core` puts each local rank on one CPU, the ranks taking in turn the CPUs
the launcher may use; without it (or with --bind-to none) every rank keeps the launcher's set.

  check_run_bind.py RANKS_CLI

Each rank prints the CPUs the kernel lets it run on (/proc/self/status); the expected sets come
from this script's own affinity (os.sched_getaffinity), which the launcher inherits.
"""
import os
import re
import subprocess
import sys


def allowed_by_rank(ranks_cli, nproc, bind):
    command = [ranks_cli, "run", "-n", str(nproc)] + bind + [
        "--", "sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr}")
    result = {}
    for line in done.stdout.splitlines():
        match = re.match(r"\[rank (\d+)\] Cpus_allowed_list:\s*(\S+)", line)
        if match:
            result[int(match.group(1))] = parse_list(match.group(2))
    return result


def parse_list(text):
    cpus = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def main():
    ranks_cli = sys.argv[1]
    mine = sorted(os.sched_getaffinity(0))
    failures = []
    nproc = len(mine) + 1  # one rank more than CPUs: the first CPU takes two ranks
    bound = allowed_by_rank(ranks_cli, nproc, ["--bind-to", "core"])
    for rank in range(nproc):
        expected = {mine[rank % len(mine)]}
        if bound.get(rank) != expected:
            failures.append(f"--bind-to core: rank {rank} may run on {bound.get(rank)}, "
                            f"expected {expected}")
    for bind in ([], ["--bind-to", "none"]):
        free = allowed_by_rank(ranks_cli, 2, bind)
        for rank in range(2):
            if free.get(rank) != set(mine):
                failures.append(f"{bind or 'no --bind-to'}: rank {rank} may run on "
                                f"{free.get(rank)}, expected the launcher's {set(mine)}")
    refused = subprocess.run([ranks_cli, "run", "-n", "2", "--bind-to", "socket", "--", "true"],
                             capture_output=True, text=True, timeout=60)
    if refused.returncode == 0 or "--bind-to" not in refused.stderr:
        failures.append("--bind-to socket was not refused with a message naming --bind-to")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print(f"ok: {nproc} ranks bound over CPUs {mine}; unbound ranks keep them all")


if __name__ == "__main__":
    main()
