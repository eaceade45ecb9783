"""The simulator for Python rank bodies: ``ranks.sim.run(fn, world_size=8)`` runs ``fn()`` as
``world_size`` ranks in this process, deterministically, on a virtual clock, and returns the
report (outcome, virtual time, each rank's state, op and call site).

Each rank has its own Python thread state (its exception state, recursion depth,
threading.local, contextvars); module globals are shared, as between threads. By default the
ranks are fibers of the calling thread; with ``rank_threads=True`` each rank runs on an OS thread
of its own, one at a time in the same order, which programs whose libraries keep per-thread state
need (torch: autograd and grad mode are per thread). Either way the run is the same run: the same
schedule, virtual clock and report.
"""

import contextlib
import os
import sys

from ranks import _core

Report = _core.Report
RankReport = _core.RankReport
Hazard = _core.Hazard


def run(fn, world_size=8, backend="nccl", seed=0, timeout=1800.0, faults=(), ranks_per_node=0,
        model="", move_data=True, trace=None, stack_bytes=0, accept=(), rank_threads=False):
    """Runs fn() on every simulated rank; returns the Report. Options as ``ranks sim``'s flags:
    ``backend`` whose rules to emulate, ``seed`` (0: FIFO schedule), ``timeout`` in seconds of
    virtual time, ``faults`` (spec strings such as "crash:rank=2,op=3"), ``model`` (cost model
    preset or file), ``trace`` (a Chrome trace path), ``accept`` (hazard kinds that leave the
    outcome ok: "buffer_in_flight", "unwaited_work", "buffering"). ``report.hazards`` lists the
    hazards the run passed through (kind, message, ranks, ops, where, occurrences, accepted).
    ``rank_threads``: each rank on a thread of its own (see above); torch.distributed then
    behaves on each rank as in one process of a torchrun job (ranks._torch_sim), so ``fn`` may
    call ``torch.distributed.init_process_group("gloo")`` and build DDP models."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_exits_reported())
        body = fn
        if rank_threads and "torch" in sys.modules:
            from ranks import _torch_sim
            enter_rank = stack.enter_context(_torch_sim.simulated_torch())

            def body():
                enter_rank()
                return fn()
        return _core.simulate(body, world_size, ranks_per_node, backend, seed, float(timeout),
                              list(faults), move_data, None if trace is None else str(trace),
                              model, stack_bytes, list(accept), bool(rank_threads))


@contextlib.contextmanager
def _exits_reported():
    """While ranks are simulated, ``os._exit`` from a rank ends the process as the C library's
    exit() does under the simulator: with a report naming the rank, its last op and line, and
    whatever other ranks had already failed with. Every rank lives in this one process, so the
    run ends there either way. A forked child's os._exit is the real one."""
    real_exit = os._exit
    simulating_pid = os.getpid()

    def exit_from_rank(status):
        if os.getpid() == simulating_pid and _core.simulating():
            _core.exit_process(int(status))
        real_exit(status)

    os._exit = exit_from_rank
    try:
        yield
    finally:
        os._exit = real_exit


def check(fn, world_size=8, **options):
    """Runs fn as ``run`` does and raises AssertionError with the human report unless the outcome
    is ok. For tests: ``ranks.sim.check(body, world_size=4)``."""
    report = run(fn, world_size=world_size, **options)
    if report.outcome != "ok":
        raise AssertionError(report.to_text())
    return report
