"""A script whose ranks start a threading.Thread that calls a collective: under the simulator the
run must end with a report naming the thread's call, not run it as "not distributed" (a false
ok, where the real run's threads would all-reduce across ranks)."""

import threading

import numpy as np

import ranks.dist as dist

dist.init_process_group("gloo")

values = np.ones(4, dtype=np.float32)
dist.all_reduce(values)


def in_a_thread():
    dist.all_reduce(values)  # the thread's collective


thread = threading.Thread(target=in_a_thread)
thread.start()
thread.join()
print(f"rank {dist.get_rank()} has {values[0]:g}")
