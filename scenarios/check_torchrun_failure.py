#!/usr/bin/env python3
"""A rank that fails under real torchrun: torchrun reports it, the others stop by themselves.

  check_torchrun_failure.py PROGRAM [TORCHRUN ARGS...]

Runs `torchrun --nproc_per_node 3 [TORCHRUN ARGS] --no_python PROGRAM` (PROGRAM is
scenarios/bugs/crashed_rank.cpp) twice: with CRASH_RANK=1 (rank 1 aborts mid-job) and with
FAIL_RANK=1 (rank 1's body throws). Each time torchrun must exit non-zero and its failure summary
must give rank 1 its own exit code (-6: SIGABRT; 1: the error), and ranks 0 and 2 exit code 75
(they stopped because a peer failed, which is what ranks says with that status) rather than
being killed by torchrun after a timeout. When rank 1 threw, a survivor names rank 1's error as
the first failure.
"""
import os
import re
import subprocess
import sys

SURVIVOR_EXIT = 75
TORCHRUN = ["torchrun", "--nproc_per_node", "3", "--redirects", "9:1", "--tee", "9:1"]


def exit_codes(summary):
    """{rank: exit code} from torchrun's ChildFailedError summary."""
    found = re.findall(r"rank\s*:\s*(\d+) \(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)",
                       summary)
    return {int(rank): int(code) for rank, code in found}


def run(program, extra, variable):
    env = dict(os.environ, RANKS_TIMEOUT="60", **{variable: "1"})
    command = TORCHRUN + extra + ["--no_python", program]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    return done, done.stdout + done.stderr


def main():
    program, extra = sys.argv[1], sys.argv[2:]
    failures = []
    for variable, code in (("CRASH_RANK", -6), ("FAIL_RANK", 1)):
        done, output = run(program, extra, variable)
        codes = exit_codes(output)
        want = {0: SURVIVOR_EXIT, 1: code, 2: SURVIVOR_EXIT}
        if done.returncode == 0:
            failures.append(f"{variable}=1: torchrun exited 0")
        if codes != want:
            failures.append(f"{variable}=1: torchrun's summary gives exit codes {codes}, "
                            f"expected {want}")
        cause = "the first failure was rank 1: the data loader ran out of batches"
        if variable == "FAIL_RANK" and cause not in output:
            failures.append("no survivor names rank 1's error as the first failure")
        if failures:
            print(output)
            break
    if failures:
        sys.exit("check_torchrun_failure: " + "; ".join(failures))
    print("torchrun named rank 1's abort and error; ranks 0 and 2 exited 75 each time")


if __name__ == "__main__":
    main()
