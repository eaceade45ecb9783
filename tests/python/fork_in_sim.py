"""Runs forked_rank.py under `ranks sim` (rank threads or fibers) and checks that rank 1's
forked child is stopped at its op with a message naming it, and that the run is the parent's
alone: each rank's line once, the values of three ranks, outcome ok.

usage: fork_in_sim.py RANKS_CLI threads|fibers
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "forked_rank.py")


def line_of(marker):
    with open(SCRIPT) as source:
        return next(n for n, text in enumerate(source, 1) if marker in text)


def main():
    cli, mode = sys.argv[1:]
    env = dict(os.environ, RANKS_SIM_RANK_THREADS="1" if mode == "threads" else "0")
    done = subprocess.run([cli, "sim", "-n", "3", "--backend", "gloo", "--", sys.executable,
                           SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    output = done.stdout + done.stderr
    print(output)
    assert done.returncode == 0, done.returncode
    child_line = line_of("the child's op")
    at = f"forked_rank.py:{child_line}"
    assert "forked by simulated rank 1" in output, output
    assert f"called all_reduce on group 'world' seq 1 at {at}" in output, output
    assert "rank 1's child ended with status 70" in output, output
    for rank in range(3):
        assert output.count(f"rank {rank} has 9") == 1, (rank, output)
    assert "outcome ok (3 ranks" in output, output
    print(f"fork_in_sim: {mode}: the forked child was stopped at its op")


if __name__ == "__main__":
    main()
