"""Starts own_failure.py's three ranks by hand (torchrun's variables, no launcher in between) and
checks each one's own exit status: 1 for rank 1, whose error is its own, 75 for ranks 0 and 2,
which only lost rank 1 (rank 0, the store's host, names its error as the job's first failure). A launcher blames by these
statuses (`ranks run`, torchrun's summary, srun).

usage: exit_statuses.py
"""

import os

from hand_started import start_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "own_failure.py")


def main():
    ranks = start_ranks([SCRIPT], 3, RANKS_STORE_TOKEN="exit-statuses-test", RANKS_TIMEOUT="60")
    results = [p.communicate(timeout=120) for p in ranks]
    statuses = [p.returncode for p in ranks]
    for rank, (out, err) in enumerate(results):
        print(f"--- rank {rank} (status {statuses[rank]})\n{out}{err}")
    assert statuses == [75, 1, 75], statuses
    # Rank 0 hosts the store, where rank 1 published its error before it exited (rank 2 may
    # look after rank 0 has gone, and then names only the peer it lost).
    assert "ranks: the first failure was rank 1: ValueError: rank 1's own bug" in results[0][1]
    assert "unreachable" not in "".join(out for out, _ in results)
    print("exit_statuses: rank 1 exited 1, the ranks that lost it 75")


if __name__ == "__main__":
    main()
