#!/usr/bin/env python3
"""A real rank that dies must not leave the others hanging.

  check_run_failure.py RANKS_CLI PROGRAM

Runs `ranks run -n 3 --backend gloo -- PROGRAM` with CRASH_RANK=1 (the program aborts on that
rank mid-job) and checks that ranks run returns non-zero, names rank 1 as the first failure and
how it died, and that the other ranks were stopped or failed on their own (the command returned:
ctest's timeout catches a hang).
"""
import os
import subprocess
import sys


def main():
    ranks_cli, program = sys.argv[1], sys.argv[2]
    env = dict(os.environ, CRASH_RANK="1", RANKS_TIMEOUT="60")
    done = subprocess.run([ranks_cli, "run", "-n", "3", "--backend", "gloo", "--grace", "20", "--",
                           program], capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    failures = []
    if done.returncode == 0:
        failures.append("ranks run exited 0")
    if "ranks run: rank 1 (pid" not in done.stderr:
        failures.append("the report does not name rank 1 as the first failure")
    if "killed by signal 6" not in done.stderr:
        failures.append("the report does not say rank 1 died on SIGABRT")
    # A rank that fails with an error of its own publishes it; the others name it as the cause.
    env = dict(os.environ, FAIL_RANK="1", RANKS_TIMEOUT="60")
    thrown = subprocess.run([ranks_cli, "run", "-n", "3", "--backend", "gloo", "--grace", "20",
                             "--", program], capture_output=True, text=True, env=env, timeout=100)
    cause = "the first failure was rank 1: the data loader ran out of batches"
    survivors = [line for line in thrown.stdout.splitlines() + thrown.stderr.splitlines()
                 if cause in line]
    if thrown.returncode == 0:
        failures.append("ranks run exited 0 when rank 1 threw")
    if not any(line.startswith("[rank 0]") for line in survivors) and \
            not any(line.startswith("[rank 2]") for line in survivors):
        failures.append("no survivor names rank 1's error as the first failure")
        output += thrown.stdout + thrown.stderr
    if failures:
        print(output)
        sys.exit("check_run_failure: " + "; ".join(failures))
    print("ranks run named the crashed rank and stopped the job; survivors named the first failure")


if __name__ == "__main__":
    main()
