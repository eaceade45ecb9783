"""Multi-rank tests on the simulator, in pytest or unittest, with torch's vocabulary.

A body decorated into a test, simulated at several world sizes:

    from ranks.testing import simulated

    @simulated(2, 3, 8, backend="gloo")
    def test_sum():
        t = torch.ones(1)
        dist.all_reduce(t)
        assert t.item() == dist.get_world_size()

Each world size is its own run; the first whose outcome is not ok fails the test with the human
report (which rank, which op, where).

A test written on torch's (or MMEngine's) multi-process pattern, with one line changed:

    from ranks.testing import MultiProcessTestCase   # was torch.testing._internal....

    class TestAllReduce(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_sum(self):
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size,
                                    init_method=f"file://{self.file_name}")
            ...

and ``ranks.testing.spawn`` in place of ``torch.multiprocessing.spawn``. Both run every rank on a
thread of its own (``rank_threads``), where torch.distributed behaves as in one process of a
real job (see ranks._torch_sim), under gloo's rules unless told otherwise.
"""

import functools
import os
import tempfile
import unittest

import ranks.sim
from ranks import _core


def simulated(*world_sizes, **options):
    """Decorates a body (no arguments) into a test that runs it at each world size (default 1, 2,
    3, 4); options as ranks.sim.run's."""
    sizes = world_sizes or (1, 2, 3, 4)

    def decorate(body):
        @functools.wraps(body)
        def test():
            for size in sizes:
                ranks.sim.check(body, world_size=size, **options)

        return test

    return decorate


class _Skipped:
    """A unittest.SkipTest raised on a rank: the run goes on for the others, and the test is
    skipped with the first rank's reason."""

    def __init__(self):
        self.reason = None

    def body(self, fn):
        def run():
            try:
                fn()
            except unittest.SkipTest as skip:
                if self.reason is None:
                    self.reason = f"rank {_core.get_rank(None)}: {skip}"
        return run


def _failed(report):
    """The error a failed run raises where torch's launchers raise theirs."""
    text = report.to_text()
    try:
        from torch.multiprocessing import ProcessRaisedException
    except ImportError:
        return RuntimeError(text)
    first = next((row.rank for row in report.ranks if row.state != "finished"), 0)
    return ProcessRaisedException(text, first, 0)


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn",  # noqa: ARG001
          backend="gloo", **options):
    """``torch.multiprocessing.spawn``'s signature: ``fn(rank, *args)`` on ``nprocs`` simulated
    ranks (each on a thread of its own, under ``backend``'s rules). Returns when every rank has
    ended; raises ``torch.multiprocessing.ProcessRaisedException`` with the simulator's report
    (which rank, which op, which line) unless the outcome is ok. ``options`` as ranks.sim.run's."""
    if not join:
        raise ValueError("ranks.testing.spawn: join=False has no meaning for simulated ranks: "
                         "they have all ended when it returns")
    skipped = _Skipped()
    report = ranks.sim.run(skipped.body(lambda: fn(_core.get_rank(None), *args)),
                           world_size=nprocs, backend=backend, rank_threads=True, **options)
    if report.outcome != "ok":
        raise _failed(report)
    if skipped.reason is not None:
        raise unittest.SkipTest(skipped.reason)


class MultiProcessTestCase(unittest.TestCase):
    """torch's and MMEngine's ``MultiProcessTestCase``, simulated: each test method runs on
    ``world_size`` simulated ranks (2, as MMEngine's; override the property), each on a thread of
    its own, where ``self.rank`` is that rank. ``_spawn_processes`` and ``_start_processes`` start
    nothing: the ranks run when the method does. ``self.file_name`` is a fresh file for a
    ``file://`` rendezvous, as torch's gives. A failed run fails the test with the report; a
    ``self.skipTest`` on any rank skips it. ``sim_options`` (backend, seed, timeout, ...) go to
    ranks.sim.run."""

    MAIN_PROCESS_RANK = -1
    TEST_ERROR_EXIT_CODE = 10
    sim_options = {"backend": "gloo"}

    @property
    def world_size(self):
        return 2

    @property
    def rank(self):
        return _core.get_rank(None) if _core.simulating() else self.MAIN_PROCESS_RANK

    @rank.setter
    def rank(self, value):  # torch's setUp sets it; the rank is the simulated one's
        pass

    @property
    def destroy_pg_upon_exit(self):
        return True

    def __init__(self, methodName="runTest", method_name="runTest"):  # noqa: N803 (unittest's)
        if method_name != "runTest":
            methodName = method_name
        super().__init__(methodName)
        test = getattr(self, methodName, None)
        if test is not None:
            setattr(self, methodName, self._simulated(test))

    def _simulated(self, test):
        @functools.wraps(test)
        def run():
            skipped = _Skipped()
            report = ranks.sim.run(skipped.body(self._rank_body(test)),
                                   world_size=int(self.world_size), rank_threads=True,
                                   **self.sim_options)
            if report.outcome != "ok":
                self.fail(report.to_text())
            if skipped.reason is not None:
                raise unittest.SkipTest(skipped.reason)
        return run

    def _rank_body(self, test):
        def body():
            test()
            if self.destroy_pg_upon_exit:
                import torch.distributed as dist
                if dist.is_initialized():
                    dist.destroy_process_group()
        return body

    def setUp(self):
        super().setUp()
        self.processes = []
        self.special_return_code_checks = {}
        self.skip_return_code_checks = []
        handle, self.file_name = tempfile.mkstemp(prefix="ranks-test-")
        os.close(handle)

    def tearDown(self):
        super().tearDown()
        if os.path.exists(self.file_name):
            os.remove(self.file_name)

    def _spawn_processes(self):
        pass

    def _fork_processes(self):
        pass

    def _start_processes(self, proc=None):  # noqa: ARG002
        pass

    @property
    def is_master(self):
        return self.rank == 0
