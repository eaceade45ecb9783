#!/usr/bin/env python3
"""A real run of a buggy program ends with the given exit status and says the given things.

  check_run_message.py RANKS_CLI PROGRAM BACKEND RANKS STATUS TEXT...

Runs `ranks run -n RANKS --backend BACKEND -- PROGRAM` (RANKS_TIMEOUT=60 unless set, so a
hang ends in a timeout, and ctest's own limit catches worse) and checks its exit status and that
every TEXT is in its output.
"""
import os
import subprocess
import sys


def main():
    ranks_cli, program, backend, ranks, status = sys.argv[1:6]
    texts = sys.argv[6:]
    env = {"RANKS_TIMEOUT": "60", **os.environ}  # a test may give a shorter one
    done = subprocess.run([ranks_cli, "run", "-n", ranks, "--backend", backend, "--", program],
                          capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    failures = [f"the output lacks '{t}'" for t in texts if t not in output]
    if done.returncode != int(status):
        failures.append(f"ranks run exited {done.returncode}, not {status}")
    if failures:
        print(output)
        sys.exit("check_run_message: " + "; ".join(failures))
    print(f"exit status {status} and every expected message")


if __name__ == "__main__":
    main()
