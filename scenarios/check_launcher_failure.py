#!/usr/bin/env python3
"""A rank that fails under a real launcher: the launcher names it, the others stop by themselves.

  check_launcher_failure.py torchrun PROGRAM [TORCHRUN ARGS...]
  check_launcher_failure.py srun PROGRAM

Runs 3 ranks of PROGRAM (scenarios/bugs/crashed_rank.cpp) twice: with CRASH_RANK=1 (rank 1
aborts mid-job) and with FAIL_RANK=1 (rank 1's body throws). Each time the launcher must exit
non-zero and give rank 1 its own end (SIGABRT; status 1); ranks 0 and 2 end with status 75 (they
stopped because a peer failed, which is what ranks says with that status), or under torchrun are
stopped by its agent, never killed after a timeout. When rank 1 threw, a survivor names its error as the first failure.
torchrun names rank 1 as its summary's Root Cause ("rank : 1 ... exitcode : -6"), where it used
to name rank 0, a survivor that it saw in the same second; srun says so in its error lines
("task 1: Aborted", "tasks 0,2: Exited with exit code 75").
"""
import os
import re
import subprocess
import sys

SURVIVOR_EXIT = 75
CAUSE = "the first failure was rank 1: the data loader ran out of batches"


def torchrun_verdict(output, variable):
    """What is wrong with torchrun's summary, or None: its Root Cause must be rank 1 with its
    own end, and any other failure it lists a survivor's 75. (The survivors give torchrun's
    agent time to see rank 1 first; it then stops them, and lists them no more.)"""
    found = re.findall(r"rank\s*:\s*(\d+) \(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)",
                       output.split("Root Cause", 1)[-1])
    if not found:
        return "its summary has no Root Cause"
    root, others = found[0], found[1:]
    want_root = ("1", str(-6 if variable == "CRASH_RANK" else 1))
    if root != want_root:
        return f"its Root Cause is rank {root[0]} exit code {root[1]}, expected {want_root}"
    if any(code != str(SURVIVOR_EXIT) for _, code in others):
        return f"it lists other failures {others}, expected none or survivors' {SURVIVOR_EXIT}"
    return None


def srun_verdict(output, variable):
    """What is wrong with srun's error lines, or None."""
    says = "task 1: Aborted" if variable == "CRASH_RANK" else "task 1: Exited with exit code 1"
    for line in (says, f"tasks 0,2: Exited with exit code {SURVIVOR_EXIT}"):
        if line not in output:
            return f"it does not say {line!r}"
    return None


# torch's launcher beside this interpreter (the project's environment's), else the one on PATH.
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")
if not os.access(TORCHRUN, os.X_OK):
    TORCHRUN = "torchrun"

LAUNCHERS = {
    "torchrun": ([TORCHRUN, "--nproc_per_node", "3"], ["--no_python"], torchrun_verdict),
    "srun": (["srun", "-n", "3"], [], srun_verdict),
}


def main():
    launcher, program, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    head, before_program, verdict = LAUNCHERS[launcher]
    failures = []
    for variable in ("CRASH_RANK", "FAIL_RANK"):
        env = dict(os.environ, RANKS_TIMEOUT="60", **{variable: "1"})
        done = subprocess.run(head + extra + before_program + [program], capture_output=True,
                              text=True, env=env, timeout=100)
        output = done.stdout + done.stderr
        if done.returncode == 0:
            failures.append(f"{variable}=1: {launcher} exited 0")
        if (wrong := verdict(output, variable)) is not None:
            failures.append(f"{variable}=1: {launcher}: {wrong}")
        if variable == "FAIL_RANK" and CAUSE not in output:
            failures.append("no survivor names rank 1's error as the first failure")
        if failures:
            print(output)
            break
    if failures:
        sys.exit("check_launcher_failure: " + "; ".join(failures))
    print(f"{launcher} named rank 1's abort and error, not a rank that stopped because of it")


if __name__ == "__main__":
    main()
