"""The shared bodies as simulated ranks, under gloo's and mpi's rules, at several world sizes;
MMEngine's fallbacks and helpers outside any run."""

import os
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bodies  # noqa: E402
import ranks.dist as dist  # noqa: E402
import ranks.sim  # noqa: E402
from ranks import _pieces  # noqa: E402


@pytest.mark.parametrize("rank_threads", [False, True], ids=["fibers", "threads"])
@pytest.mark.parametrize("backend", ["gloo", "mpi"])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_bodies(backend, world_size, rank_threads, tmp_path):
    def body():
        dist.init_dist("pytorch", backend=backend)
        bodies.run_all(str(tmp_path))

    report = ranks.sim.check(body, world_size=world_size, backend=backend,
                             rank_threads=rank_threads)
    assert [r.state for r in report.ranks] == ["finished"] * world_size


@pytest.mark.parametrize("world_size", [1, 3, 8])
def test_backward_with_a_collective_inside_on_rank_threads(world_size):
    """A gradient hook that all-reduces inside backward(): every rank's autograd runs on its own
    thread, so a rank blocked in the hook does not hand its backward pass to the next rank."""
    results = {}
    threads = {}

    def body():
        import threading
        dist.init_dist("pytorch", backend="gloo")
        rank = dist.get_rank()
        threads[rank] = threading.get_ident()
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = torch.tensor([rank + 1.0, 2.0 * rank, -1.0])

        def summed(grad):
            dist.all_reduce(grad)
            return grad

        w.register_hook(summed)
        for step in range(2):
            w.grad = None
            loss = (w * x * (step + 1)).sum() + (w ** 2).sum()
            if rank == 0:
                with torch.no_grad():  # grad mode is per thread: no other rank's backward changes
                    dist.barrier()
            else:
                dist.barrier()
            loss.backward()
            results[(rank, step)] = w.grad.tolist()
        assert torch.is_grad_enabled()

    ranks.sim.check(body, world_size=world_size, backend="gloo", rank_threads=True)
    assert len(set(threads.values())) == world_size
    w = [1.0, 2.0, 3.0]
    for step in range(2):
        # d/dw of sum over ranks: x_r * (step + 1) + 2 w, summed by the hook.
        expected = [sum(xs[i] * (step + 1) + 2 * w[i] for xs in
                        ([r + 1.0, 2.0 * r, -1.0] for r in range(world_size)))
                    for i in range(3)]
        for rank in range(world_size):
            assert results[(rank, step)] == pytest.approx(expected), (rank, step)


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
    # MMEngine's helpers: nothing to make, nothing to reduce (a generator is not even iterated).
    dist.init_local_group(0, 8)
    assert dist.get_local_group() is None
    assert dist.get_comm_device() == torch.device("cpu")
    params = (t for t in [torch.ones(2)])
    dist.all_reduce_params(params, op="bogus")
    assert next(params).tolist() == [1.0, 1.0]


def test_data_device_helpers():
    """get_data_device and cast_data_device on cpu tensors, with MMEngine's messages."""
    t = torch.ones(2)
    cpu = torch.device("cpu")
    for data in (t, [t, t], [t, {"key": t}], {"k1": t, "k2": [t]}):
        assert dist.get_data_device(data) == cpu
    for data in ([t, 123], [t, {"key": "123"}], {"k1": t, "k2": ["123"]}, "123"):
        with pytest.raises(TypeError, match="data should be a Tensor, sequence of tensor or dict"):
            dist.get_data_device(data)
    for data in ([], {}):
        with pytest.raises(ValueError, match="data should not be empty"):
            dist.get_data_device(data)
    assert dist.cast_data_device(t, cpu) is t  # already there: the same object
    out = [torch.zeros(2), {"key": torch.zeros(2)}]
    moved = dist.cast_data_device([t, {"key": t * 2}], "cpu", out=out)
    assert moved[0] is t and out[0].tolist() == [1.0, 1.0] and out[1]["key"].tolist() == [2.0, 2.0]
    assert type(dist.cast_data_device((t,), cpu)) is tuple
    with pytest.raises(ValueError, match="length of data and out should be same"):
        dist.cast_data_device({"a": t, "b": t}, cpu, out={"a": t})
    for data in (123, "123", np.ones(2)):
        with pytest.raises(TypeError, match="data should be a Tensor, list of tensor or dict"):
            dist.cast_data_device(data, cpu)
    with pytest.raises(TypeError, match="out should be the same type with data"):
        dist.cast_data_device(t, cpu, out="123")
    with pytest.raises(TypeError, match="out should not be a set"):
        dist.cast_data_device({t}, cpu, out={t})
    with pytest.raises(ValueError, match="data should not be empty"):
        dist.cast_data_device([], cpu)


def test_param_buckets():
    """all_reduce_params' buckets: one per (type, dtype, device) in first-seen order, cut before a
    tensor that would pass the size limit."""
    f = [torch.zeros(4) for _ in range(3)]  # 16 bytes each
    i = torch.zeros(2, dtype=torch.int64)
    a = np.zeros(2, np.float32)
    ids = lambda buckets: [[id(t) for t in bucket] for bucket in buckets]  # noqa: E731
    assert ids(_pieces.buckets([f[0], i, f[1], a, f[2]], -1)) == \
        [[id(f[0]), id(f[1]), id(f[2])], [id(i)], [id(a)]]
    assert ids(_pieces.buckets([f[0], f[1], f[2]], 32 / 2**20)) == \
        [[id(f[0]), id(f[1])], [id(f[2])]]
    big = torch.zeros(100)  # past the limit alone: a bucket of its own
    assert ids(_pieces.buckets([big, f[0], f[1]], 16 / 2**20)) == [[id(big)], [id(f[0])], [id(f[1])]]


@pytest.mark.parametrize("world_size", [1, 2, 5])
def test_ddp_script_body_matches_averaged_gradient_descent(world_size):
    """torch.distributed, unchanged, on rank threads: init_process_group("gloo"), DDP, a few
    SGD steps. The expected parameters come from plain gradient descent on the average of the
    ranks' gradients, computed here without any process group."""
    import torch.distributed as torch_dist
    from torch.nn.parallel import DistributedDataParallel

    def batch(rank, step):
        generator = torch.Generator().manual_seed(1000 * step + rank)
        return torch.randn(3, 4, generator=generator), torch.randn(3, 1, generator=generator)

    def fresh_model():
        torch.manual_seed(0)
        return torch.nn.Linear(4, 1)

    finals = {}
    backends = {}

    def body():
        torch_dist.init_process_group("gloo")
        rank = torch_dist.get_rank()
        backends[rank] = torch_dist.get_backend()
        model = fresh_model() if rank == 0 else torch.nn.Linear(4, 1)  # DDP broadcasts rank 0's
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
        for step in range(3):
            x, y = batch(rank, step)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            optimizer.step()
        finals[rank] = [p.detach().clone() for p in model.parameters()]
        torch_dist.destroy_process_group()

    report = ranks.sim.check(body, world_size=world_size, backend="gloo", rank_threads=True)
    assert report.outcome == "ok"
    assert backends == {r: "gloo" for r in range(world_size)}
    reference = fresh_model()
    for step in range(3):
        grads = []
        for rank in range(world_size):
            reference.zero_grad()
            x, y = batch(rank, step)
            torch.nn.functional.mse_loss(reference(x), y).backward()
            grads.append([p.grad.clone() for p in reference.parameters()])
        with torch.no_grad():
            for i, p in enumerate(reference.parameters()):
                p -= 0.05 * sum(g[i] for g in grads) / world_size
    for rank in range(world_size):
        for got, want in zip(finals[rank], reference.parameters()):
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (rank, got, want)


@pytest.mark.parametrize("world_size", [2, 4])
def test_each_rank_thread_has_its_own_random_generators(world_size):
    """Every rank seeds torch, random and numpy.random alike and draws between collectives, as
    each process of a real job would: each rank's draws are what one process alone draws, not a
    share of one stream interleaved with the other ranks'. Unseeded, torch starts from its
    default seed on every rank, as every process does."""
    import random as py_random

    import torch.distributed as torch_dist

    draws = {}

    def body():
        torch_dist.init_process_group("gloo")
        rank = torch_dist.get_rank()
        unseeded = torch.rand(2).tolist()
        torch.manual_seed(7)
        py_random.seed(11)
        np.random.seed(13)
        mine = []
        for _ in range(3):
            mine.append((torch.rand(3).tolist(), py_random.random(), np.random.rand(2).tolist()))
            torch_dist.barrier()  # every other rank draws before this one goes on
        draws[rank] = (unseeded, mine)

    ranks.sim.check(body, world_size=world_size, backend="gloo", rank_threads=True)
    generator = torch.Generator()
    expected_unseeded = torch.rand(2, generator=generator).tolist()
    torch_generator = torch.Generator().manual_seed(7)
    python_generator = py_random.Random(11)
    numpy_generator = np.random.RandomState(13)
    expected = [(torch.rand(3, generator=torch_generator).tolist(), python_generator.random(),
                 numpy_generator.rand(2).tolist()) for _ in range(3)]
    for rank in range(world_size):
        assert draws[rank] == (expected_unseeded, expected), rank


def test_mmengine_managed_instances_are_each_ranks_own():
    """MMEngine's MessageHub (a ManagerMixin: named instances in a class attribute) on rank
    threads: each rank's get_instance and get_current_instance see the hub it made, as in its own
    process, and the instances made outside the run are there again after it."""
    from mmengine.logging import MessageHub

    outside = MessageHub.get_instance("outside the run")
    seen = {}

    def body():
        import torch.distributed as torch_dist
        torch_dist.init_process_group("gloo")
        rank = torch_dist.get_rank()
        hub = MessageHub.get_instance(f"hub of rank {rank}")
        hub.update_info("rank", rank)
        torch_dist.barrier()  # every other rank makes its hub before this one looks
        current = MessageHub.get_current_instance()
        seen[rank] = (current.instance_name, current.get_info("rank"),
                      MessageHub.check_instance_created("hub of rank 0"),
                      MessageHub.check_instance_created("outside the run"))

    ranks.sim.check(body, world_size=3, backend="gloo", rank_threads=True)
    assert seen == {r: (f"hub of rank {r}", r, r == 0, False) for r in range(3)}
    assert MessageHub.get_current_instance() is outside
