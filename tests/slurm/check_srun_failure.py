#!/usr/bin/env python3
"""A rank that fails under srun: srun names it, the others stop by themselves.

  check_srun_failure.py PROGRAM

Runs `srun -n 3 PROGRAM` (scenarios/bugs/crashed_rank.cpp) with CRASH_RANK=1 (rank 1 aborts
mid-job) and with FAIL_RANK=1 (rank 1's body throws). Each time srun must exit non-zero and say
that task 1 aborted or exited 1, and that tasks 0 and 2 exited 75 (they stopped because a peer
failed) rather than being killed; when rank 1 threw, a survivor names its error as the first
failure.
"""
import os
import subprocess
import sys

CASES = (("CRASH_RANK", "task 1: Aborted"), ("FAIL_RANK", "task 1: Exited with exit code 1"))


def main():
    program = sys.argv[1]
    failures = []
    for variable, says in CASES:
        env = dict(os.environ, RANKS_TIMEOUT="60", **{variable: "1"})
        done = subprocess.run(["srun", "-n", "3", program], capture_output=True, text=True,
                              env=env, timeout=100)
        output = done.stdout + done.stderr
        if done.returncode == 0:
            failures.append(f"{variable}=1: srun exited 0")
        if says not in output:
            failures.append(f"{variable}=1: srun does not say {says!r}")
        if "tasks 0,2: Exited with exit code 75" not in output:
            failures.append(f"{variable}=1: srun does not say that tasks 0 and 2 exited 75")
        cause = "the first failure was rank 1: the data loader ran out of batches"
        if variable == "FAIL_RANK" and cause not in output:
            failures.append("no survivor names rank 1's error as the first failure")
        if failures:
            print(output)
            break
    if failures:
        sys.exit("check_srun_failure: " + "; ".join(failures))
    print("srun named rank 1's abort and error; tasks 0 and 2 exited 75 each time")


if __name__ == "__main__":
    main()
