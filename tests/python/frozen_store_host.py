"""Rank 0 of a real Python job, which hosts the rendezvous store, freezes (SIGSTOP) between two
collectives. Ranks 1 and 2 time out (RANKS_TIMEOUT=4) and must exit 75 soon after, saying that
the store did not answer within the stuck window (2 s + 0.5 s) and that rank 0, which hosts it,
is frozen, where they used to wait the store's whole timeout twice more and name no one. The
ranks are started by hand (torchrun's variables, no launcher in between).

usage: frozen_store_host.py          (the test)
       frozen_store_host.py body     (one rank of it)
"""

import os
import signal
import sys

from hand_started import start_ranks

WANT = ["the job's rendezvous store did not answer within 2500 ms",
        "rank 0, which hosts it, is frozen"]


def body():
    import numpy as np

    import ranks.dist as dist

    dist.init_process_group("gloo")
    values = np.ones(4, dtype=np.float32)
    dist.all_reduce(values)
    if dist.get_rank() == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
    dist.all_reduce(values)


def main():
    ranks = start_ranks([os.path.abspath(__file__), "body"], 3,
                        RANKS_STORE_TOKEN="frozen-store-host-test", RANKS_TIMEOUT="4")
    try:
        survivors = [p.communicate(timeout=60) for p in ranks[1:]]
    finally:
        ranks[0].kill()  # frozen: only SIGKILL ends it
        for p in ranks:
            if p.poll() is None:
                p.kill()
            p.wait()
    statuses = [p.returncode for p in ranks[1:]]
    for rank, (out, err) in enumerate(survivors, start=1):
        print(f"--- rank {rank} (status {statuses[rank - 1]})\n{out}{err}")
    assert statuses == [75, 75], statuses
    for out, err in survivors:
        for want in WANT:
            assert want in err, want
    print("frozen_store_host: ranks 1 and 2 exited 75 naming rank 0, the store's host, as frozen")


if __name__ == "__main__":
    body() if sys.argv[1:] == ["body"] else main()
