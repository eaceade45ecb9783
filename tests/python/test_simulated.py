"""The shared bodies as simulated ranks, under gloo's and mpi's rules, at several world sizes."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bodies  # noqa: E402
import ranks.dist as dist  # noqa: E402
import ranks.sim  # noqa: E402


@pytest.mark.parametrize("backend", ["gloo", "mpi"])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_bodies(backend, world_size, tmp_path):
    def body():
        dist.init_dist("pytorch", backend=backend)
        bodies.run_all(str(tmp_path))

    report = ranks.sim.check(body, world_size=world_size, backend=backend)
    assert [r.state for r in report.ranks] == ["finished"] * world_size


def test_not_distributed(tmp_path):
    """Outside any run: MMEngine's fallbacks."""
    assert dist.get_dist_info() == (0, 1)
    assert not dist.is_distributed() and dist.get_backend() is None
    t = [1.0]
    dist.all_reduce(t, "bogus")  # as MMEngine: nothing to reduce, nothing checked
    x = dist.all_gather(5)
    assert x == [5]
    assert dist.collect_results([1, None, 3], 2, tmpdir=str(tmp_path)) == [1, None]
    assert dist.all_gather_object({"a": 1}) == [{"a": 1}]
    assert dist.new_group([0]) is None
    dist.barrier()
