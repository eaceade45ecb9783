"""ranks.testing's drop-ins for torch's multi-process test patterns: a MultiProcessTestCase
subclass and a torch.multiprocessing.spawn-style launch, both simulated. The test bodies here
are written in the style of torch's and MMEngine's distributed tests; every expected value is
computed from the rank and world size alone."""

import inspect
import os
import sys
import unittest

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ranks.testing import MultiProcessTestCase, spawn  # noqa: E402


class Collectives(MultiProcessTestCase):
    @property
    def world_size(self):
        return 3

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def _init(self):
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size,
                                init_method=f"file://{self.file_name}")

    def test_all_reduce_and_objects(self):
        self._init()
        t = torch.tensor([float(self.rank + 1)])
        dist.all_reduce(t)
        self.assertEqual(t.item(), 6.0)
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, {"rank": self.rank})
        self.assertEqual(gathered, [{"rank": r} for r in range(3)])

    def test_sub_group(self):
        self._init()
        pair = dist.new_group([0, 2])
        t = torch.tensor([self.rank])
        if self.rank in (0, 2):
            dist.all_reduce(t, group=pair)
            self.assertEqual(t.item(), 2)
        else:
            self.assertEqual(t.item(), 1)

    def test_skipped_on_one_rank(self):
        if self.rank == 1:
            self.skipTest("needs something rank 1 lacks")


class Disagreeing(MultiProcessTestCase):
    __test__ = False  # meant to fail: run by the test below, not collected by pytest

    def test_ranks_disagree(self):
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size,
                                init_method=f"file://{self.file_name}")
        dist.all_reduce(torch.ones(2 + self.rank))  # the failing line


def _line_of(function, text):
    """This file's line number of the first line of function that contains text."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _results(case):
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    result = unittest.TestResult()
    suite.run(result)
    return result


def test_a_multi_process_test_case_runs_simulated():
    result = _results(Collectives)
    assert result.testsRun == 3
    assert not result.failures and not result.errors, result.failures + result.errors
    assert [reason for _, reason in result.skipped] == ["rank 1: needs something rank 1 lacks"]


def test_a_failing_multi_process_test_case_fails_with_the_report():
    result = _results(Disagreeing)
    assert len(result.failures) == 1
    text = result.failures[0][1]
    assert "outcome mismatch (2 ranks, gloo rules" in text, text
    line = _line_of(Disagreeing.test_ranks_disagree, "the failing line")
    assert f"test_testing.py:{line}" in text, text


def _spawned(rank, world, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"  # as MMEngine's and torch's tests set them
    os.environ["MASTER_PORT"] = "29505"
    os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from mmengine import dist as mmengine_dist
    data = torch.tensor([1, 2]) if rank == 0 else torch.tensor([3, 4])
    mmengine_dist.all_reduce(data, "sum")
    results[rank] = (data.tolist(), mmengine_dist.all_gather_object(rank * 10),
                     os.environ["RANK"], os.environ["WORLD_SIZE"])


def test_spawn_runs_fn_on_every_rank():
    results = {}
    before = {name: os.environ.get(name) for name in ("RANK", "MASTER_PORT", "WORLD_SIZE")}
    spawn(_spawned, args=(2, results), nprocs=2)
    assert results == {0: ([4, 6], [0, 10], "0", "2"), 1: ([4, 6], [0, 10], "1", "2")}
    # What the ranks set in os.environ was their own.
    assert {name: os.environ.get(name) for name in before} == before


def _deadlocking(rank):
    dist.init_process_group("gloo", rank=rank, world_size=2, init_method="env://")
    t = torch.zeros(1)
    dist.recv(t, src=1 - rank)


def test_spawn_raises_with_the_report():
    with pytest.raises(torch.multiprocessing.ProcessRaisedException) as failure:
        spawn(_deadlocking, nprocs=2)
    assert "outcome deadlock (2 ranks, gloo rules" in str(failure.value)
    assert f"test_testing.py:{_line_of(_deadlocking, 'dist.recv')}" in str(failure.value)


class StoresOfTheTestsOwn(MultiProcessTestCase):
    """torch's own tests make their store: a FileStore on self.file_name, or a TCPStore whose
    master is rank 0."""

    @property
    def world_size(self):
        return 3

    def test_file_store(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        t = torch.tensor([self.rank])
        dist.all_reduce(t)
        self.assertEqual(t.item(), 3)
        store.set(f"from {self.rank}", str(self.rank * 2))
        self.assertEqual(store.get(f"from {(self.rank + 1) % 3}"), str((self.rank + 1) % 3 * 2).encode())

    def test_tcp_store(self):
        store = dist.TCPStore("127.0.0.1", 29511, self.world_size, self.rank == 0)
        self.assertEqual(store.port, 29511)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        self.assertEqual(store.add("arrived", 1) <= 3, True)
        dist.barrier()
        self.assertEqual(store.add("arrived", 0), 3)
