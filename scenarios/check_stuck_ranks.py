#!/usr/bin/env python3
"""A real job whose ranks time out says who waits for whom, not only that something is missing.

  check_stuck_ranks.py RANKS_CLI PROGRAM SOURCE

Runs bug_stuck_ranks under `ranks run -n 4 --backend gloo` with a 2 s timeout: rank 3 waits in a
recv that rank 0 posts only after an all_reduce, ranks 0 and 1 wait in that all_reduce, rank 2
computes for 40 minutes. Each timed-out rank writes where it is stuck to the store and reads what
the ranks it waits on wrote within a 2.5 s window, long enough for a loaded CI machine (real/stuck_peers.hpp). Checks that rank 3 names rank 0's
all_reduce, that ranks 0 and 1 name rank 3's recv and each other, that rank 2 is the one that
wrote nothing, and that ranks run says no rank failed for a reason of its own and that it
stopped rank 2 (the command returned: ctest's timeout catches a hang).
"""
import os
import subprocess
import sys

from check_scenario import where  # the call site a // @where:TAG comment marks


def line_of(output, rank):
    for line in output.splitlines():
        if line.startswith(f"[rank {rank}] ranks: error:"):
            return line
    return ""


def main():
    ranks_cli, program, source = sys.argv[1], sys.argv[2], sys.argv[3]
    recv_at, all_reduce_at = where(source, "recv"), where(source, "all_reduce")
    env = dict(os.environ, RANKS_TIMEOUT="2", RANKS_STUCK_WINDOW_MS="2500")
    done = subprocess.run([ranks_cli, "run", "-n", "4", "--backend", "gloo", "--", program],
                          capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    expected = {
        3: [f"rank 3 timed out after 2 s in recv on group 'world' seq 0 at {recv_at}",
            f"rank 0 is stuck in all_reduce on group 'world' seq 0 at {all_reduce_at}"],
        0: [f"rank 0 timed out after 2 s in all_reduce on group 'world' seq 0 at {all_reduce_at}",
            "rank 1 timed out in this all_reduce too",
            f"rank 3 is stuck in recv from rank 0 (tag 0) on group 'world' p2p seq 0 at {recv_at}",
            "rank 2 wrote nothing within 2500 ms: not in this all_reduce"],
        1: ["rank 0 timed out in this all_reduce too",
            f"rank 3 is stuck in recv from rank 0 (tag 0)",
            "rank 2 wrote nothing within 2500 ms"],
    }
    failures = []
    for rank, texts in expected.items():
        line = line_of(output, rank)
        failures += [f"rank {rank}'s error lacks '{t}'" for t in texts if t not in line]
    if line_of(output, 2):
        failures.append("rank 2, which was computing, reported an error")
    summary = "ranks run: no rank failed for a reason of its own: ranks 0, 1, 3 stopped on a " \
              "timeout or a peer's failure (exit status 75); rank 2 was still running"
    if summary not in done.stderr:
        failures.append("ranks run's summary does not say that")
    if done.returncode != 75:
        failures.append(f"ranks run exited {done.returncode}, not 75")
    if failures:
        print(output)
        sys.exit("check_stuck_ranks: " + "; ".join(failures))
    # Rank 1 in a barrier at the same seq: another op, not "in this all_reduce too". Rank 0
    # arrives half a second late, so rank 1 times out first: rank 0 must still time out itself.
    done = subprocess.run([ranks_cli, "run", "-n", "4", "--backend", "gloo", "--", program,
                           "--barrier-on-rank-1"],
                          capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    line = line_of(output, 0)
    barrier_at = where(source, "barrier")
    if f"rank 1 is stuck in barrier on group 'world' seq 0 at {barrier_at}" not in line or \
            "rank 1 timed out in this all_reduce too" in line:
        print(output)
        sys.exit("check_stuck_ranks: rank 0 does not say that rank 1 is stuck in a barrier")
    print("every timed-out rank said where the ranks it waits on are; rank 2 was named as silent")


if __name__ == "__main__":
    main()
