#!/usr/bin/env python3
"""A blocking collective past its deadline under mpi ends the job, named, instead of hanging.

  check_mpi_timeout.py PROGRAM SOURCE

Runs PROGRAM (bug_slow_metrics: rank 0 computes for 40 minutes while rank 1 waits in an
all_reduce) under `mpirun -np 2` with RANKS_BACKEND=mpi and a 2 s timeout. The mpi backend runs
the blocking API's collectives as MPI's blocking calls, which nothing can interrupt: its watchdog
ends rank 1 once the deadline passes, printing the Timeout as ranks::main prints an uncaught one,
and mpirun then stops rank 0. Checks that mpirun returned non-zero (returning at all means rank
0's sleep was cut short: ctest's timeout catches a hang) and that rank 1 named the op, group,
sequence number, call site and timeout.
"""
import os
import subprocess
import sys

from check_scenario import where  # the call site a // @where:TAG comment marks


def main():
    program, source = sys.argv[1], sys.argv[2]
    env = dict(os.environ, RANKS_BACKEND="mpi", RANKS_TIMEOUT="2")
    done = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                           "-x", "RANKS_BACKEND", "-x", "RANKS_TIMEOUT", program],
                          capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    expected = [
        "ranks: error: rank 1 timed out after 2 s in all_reduce on group 'world' seq 0 at "
        + where(source, "all_reduce"),
        "mpi backend); MPI cannot tell which ranks have not arrived",
        "a blocking MPI call can be neither interrupted nor cancelled, so this process exits",
    ]
    failures = [f"missing '{text}'" for text in expected if text not in done.stderr]
    if done.returncode == 0:
        failures.append("mpirun exited 0")
    if "ranks: error: rank 0" in output:
        failures.append("rank 0, which was computing, reported an error of its own")
    if failures:
        print(output)
        sys.exit("check_mpi_timeout: " + "; ".join(failures))
    print("rank 1's watchdog named the late all_reduce and ended the job")


if __name__ == "__main__":
    main()
