#!/usr/bin/env python3
"""`ranks run` keeps each rank's streams apart and leaves nothing running behind.

  check_run_output.py RANKS_CLI

Runs a two-rank shell program under `ranks run`: each rank starts a helper that outlives it (as a
data-loader worker might), writes a line to stdout, a line to stderr and a last line without a
newline; rank 1 exits 3. Checks that stdout lines arrive on stdout and stderr lines on stderr,
each with its [rank k] prefix and unspliced; that ranks run returns rank 1's status (it returned
at all: a helper holding a rank's pipe used to keep it reading for ever, which ctest's timeout
catches); and that no helper is left running.
"""
import os
import stat
import subprocess
import sys
import tempfile

PROGRAM = """#!/bin/sh
sleep 300 &
echo "$$" > "$HELPERS/$RANK"
echo "out line $RANK"
echo "err line $RANK" >&2
printf "no newline $RANK"
if [ "$RANK" = 1 ]; then exit 3; fi
"""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def main():
    ranks_cli = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        program = os.path.join(scratch, "rank.sh")
        with open(program, "w") as f:
            f.write(PROGRAM)
        os.chmod(program, stat.S_IRWXU)
        env = dict(os.environ, HELPERS=scratch)
        done = subprocess.run([ranks_cli, "run", "-n", "2", "--grace", "2", "--", program],
                              capture_output=True, text=True, env=env, timeout=100)
        out, err = done.stdout.splitlines(), done.stderr.splitlines()
        for rank in (0, 1):
            for line, stream, name in ((f"[rank {rank}] out line {rank}", out, "stdout"),
                                       (f"[rank {rank}] no newline {rank}", out, "stdout"),
                                       (f"[rank {rank}] err line {rank}", err, "stderr")):
                if line not in stream:
                    failures.append(f"'{line}' is not a line of {name}")
        if done.returncode != 3:
            failures.append(f"ranks run exited {done.returncode}, not rank 1's 3")
        # The helpers are the shells' children: `sleep` processes whose parent was the rank.
        helpers = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline") as f:
                    cmdline = f.read()
                with open(f"/proc/{pid}/environ") as f:
                    ours = f"HELPERS={scratch}" in f.read()
            except OSError:
                continue
            if ours and cmdline.startswith("sleep") and alive(pid):
                helpers.append(int(pid))
        for pid in helpers:
            os.kill(pid, 9)
        if helpers:
            failures.append(f"helpers {helpers} were left running")
    if failures:
        print(done.stdout + "\n---\n" + done.stderr)
        sys.exit("check_run_output: " + "; ".join(failures))
    print("streams kept apart, rank 1's status returned, nothing left running")


if __name__ == "__main__":
    main()
