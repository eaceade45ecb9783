"""torch.distributed programs under the simulator, measured in one process run by run:

    python3 reports/torch_sim.py baton N ROUNDS        the bare hand-over between N threads
    python3 reports/torch_sim.py ranks N ITERATIONS    an 8-byte torch.distributed all_reduce
                                                       loop, N simulated ranks on their threads
    python3 reports/torch_sim.py threaded N ITERATIONS the same loop on torch's own in-process
                                                       multi-threaded process group

Each prints microseconds per rank-operation (per hand-over for the baton). reports/torch_sim.sh
runs them side by side, with a DDP training of scenarios/python/ddp_train.py under `ranks sim`.
"""

import sys
import threading
import time

import torch
import torch.distributed as dist


def baton(threads, rounds):
    from ranks import _core
    return _core.baton_seconds(threads, rounds) / (threads * rounds)


def ranks_loop(world, iterations):
    import ranks.sim

    def body():
        dist.init_process_group("gloo")
        t = torch.zeros(2)  # 8 bytes
        dist.all_reduce(t)
        for _ in range(iterations):
            dist.all_reduce(t)

    start = time.perf_counter()
    ranks.sim.check(body, world_size=world, backend="gloo", rank_threads=True)
    return (time.perf_counter() - start) / (world * (iterations + 1))


def threaded_loop(world, iterations):
    from torch.testing._internal.distributed import multi_threaded_pg

    multi_threaded_pg._install_threaded_pg()
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    store = dist.HashStore()
    ready = threading.Barrier(world + 1)

    def worker(rank):
        dist.init_process_group("threaded", rank=rank, world_size=world, store=store)
        t = torch.zeros(2)
        dist.all_reduce(t)
        ready.wait()
        for _ in range(iterations):
            dist.all_reduce(t)
        ready.wait()

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    ready.wait()
    elapsed = time.perf_counter() - start
    for thread in threads:
        thread.join()
    return elapsed / (world * iterations)


def main():
    what, world, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    run = {"baton": baton, "ranks": ranks_loop, "threaded": threaded_loop}[what]
    seconds = run(world, count)
    unit = "hand-over" if what == "baton" else "rank-operation"
    print(f"{what:8} {world:5} threads: {seconds * 1e6:7.2f} us per {unit}", flush=True)


if __name__ == "__main__":
    main()
