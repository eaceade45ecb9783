"""Multi-rank test bodies for the Python package, written once and run everywhere: as simulated
ranks (test_simulated.py, under every backend's rules) and as real processes (run_real.py under
`ranks run`, mpirun and torchrun). Each body runs in an initialised world and checks its results
against values computed here from the rank and world size alone."""

import collections
import math

import numpy as np
import torch

import ranks.dist as dist
from ranks.errors import InvalidArgument


def tensor_all_reduce():
    rank, world = dist.get_dist_info()
    # bool tensors, which torch 1.13 and numpy 1.24 do not export through DLPack, in place too.
    found = torch.tensor([rank == world - 1, False, True])
    dist.all_reduce(found, "max")
    assert found.tolist() == [True, False, True] and found.dtype == torch.bool, found
    everyone = torch.tensor([rank != 0 or world == 1])
    dist.all_reduce(everyone, "min")
    assert everyone.tolist() == [world == 1], everyone
    mask = np.array([rank == 0, rank == 1, True])
    dist.broadcast(mask, src=0)
    assert mask.tolist() == [True, False, True] and mask.dtype == np.bool_, mask
    t = torch.full((5,), float(rank + 1))
    assert dist.all_reduce(data=t, op="sum", group=None, async_op=False) is None
    assert t.tolist() == [world * (world + 1) / 2] * 5, t
    a = np.arange(4, dtype=np.int64) * (rank + 1)
    dist.all_reduce(a, "MAX")
    assert a.tolist() == [i * world for i in range(4)], a
    m = torch.tensor([rank * 2, rank * 2 + 1], dtype=torch.int64)
    dist.all_reduce(m, "mean")
    expected = [sum(2 * r for r in range(world)) // world,
                sum(2 * r + 1 for r in range(world)) // world]
    assert m.tolist() == expected, (m, expected)


def tensor_broadcast_gather():
    rank, world = dist.get_dist_info()
    src = world - 1
    b = np.arange(6, dtype=np.float64).reshape(2, 3) + 100 * rank
    dist.broadcast(b, src=src)
    assert b.tolist() == (np.arange(6).reshape(2, 3) + 100 * src).tolist(), b
    gathered = dist.all_gather(torch.tensor([rank, -rank], dtype=torch.int32))
    assert [g.tolist() for g in gathered] == [[r, -r] for r in range(world)], gathered
    assert all(g.dtype == torch.int32 for g in gathered)
    # The pieces are the caller's own tensors: writing one leaves the others as gathered.
    gathered[0].fill_(7)
    assert [g.tolist() for g in gathered[1:]] == [[r, -r] for r in range(1, world)], gathered
    scalars = dist.all_gather(np.array(rank * 1.5))
    assert [s.shape for s in scalars] == [()] * world, scalars
    assert [float(s) for s in scalars] == [r * 1.5 for r in range(world)], scalars
    at_root = dist.gather(np.full(3, rank, dtype=np.float32), dst=0)
    if rank == 0:
        assert [g.tolist() for g in at_root] == [[float(r)] * 3 for r in range(world)], at_root
    else:
        assert at_root == [], at_root


def gathered_dtypes_and_shapes():
    rank, world = dist.get_dist_info()
    for dtype in (torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                  torch.bfloat16, torch.float32, torch.float64):
        for shape in ((), (2, 3), (0,), (3, 0, 2)):
            def mine(r):
                return torch.full(shape, r % 2 == 1 if dtype == torch.bool else r + 1, dtype=dtype)
            expected = [mine(r).tolist() for r in range(world)]
            gathered = dist.all_gather(mine(rank))
            assert [g.tolist() for g in gathered] == expected, (dtype, shape, gathered)
            assert all(g.shape == shape and g.dtype == dtype for g in gathered), (dtype, shape)
            at_root = dist.gather(mine(rank), dst=world - 1)
            if rank == world - 1:
                assert [g.tolist() for g in at_root] == expected, (dtype, shape, at_root)


def mmengine_helpers():
    rank, world = dist.get_dist_info()
    mean = sum(range(world)) / world
    # all_reduce_params as MMEngine's SyncBuffersHook calls it: buffers from a generator, mean.
    buffers = [torch.tensor([rank, rank + 1.0]) for _ in range(3)]
    weight = torch.nn.Parameter(torch.full((2, 2), float(rank)))
    dist.all_reduce_params((b for b in buffers + [weight]), op="mean")
    assert all(b.tolist() == [mean, mean + 1] for b in buffers), buffers
    assert weight.tolist() == [[mean] * 2] * 2 and weight.requires_grad, weight
    # Sums of torch and numpy tensors: one bucket per type, 16-byte buckets, one call per tensor.
    total = sum(range(world))
    for coalesce, bucket_size_mb in ((True, -1), (True, 16 / 2**20), (False, -1)):
        ints = [torch.tensor([rank, 2 * rank]) for _ in range(3)] + [np.full(3, rank + 1, np.int32)]
        dist.all_reduce_params(ints, coalesce=coalesce, bucket_size_mb=bucket_size_mb)
        assert all(t.tolist() == [total, 2 * total] for t in ints[:3]), (coalesce, ints)
        assert ints[3].tolist() == [total + world] * 3 and ints[3].dtype == np.int32, ints
    # The local group: nodes of two consecutive ranks where the world divides into them.
    per_node = 2 if world % 2 == 0 else 1
    dist.init_local_group(rank // per_node, per_node)
    local = dist.get_local_group()
    assert dist.get_dist_info(local) == (rank % per_node, per_node), dist.get_dist_info(local)
    on_node = torch.tensor([float(rank)])
    dist.all_reduce(on_node, group=local)
    first = rank - rank % per_node
    assert on_node.item() == sum(range(first, first + per_node)), on_node
    try:
        dist.init_local_group(rank // per_node, per_node)
        raise AssertionError("a second init_local_group was accepted")
    except InvalidArgument as e:
        assert "made already" in str(e), e
    # The comm device follows the backend; data devices and casts as MMEngine's.
    assert dist.get_comm_device().type == ("cuda" if dist.get_backend() == "nccl" else "cpu")
    assert dist.get_comm_device(local).type == dist.get_comm_device().type
    assert dist.get_data_device([on_node, {"k": on_node}]) == torch.device("cpu")
    out = {"a": torch.zeros(1), "b": [torch.zeros(2)]}
    moved = dist.cast_data_device({"a": on_node, "b": [torch.ones(2)]}, "cpu", out=out)
    assert moved["a"] is on_node and out["a"].item() == on_node.item(), (moved, out)
    assert out["b"][0].tolist() == [1.0, 1.0], out


def torch_tensor_forms():
    """torch's single-tensor collectives, their pieces written in place."""
    rank, world = dist.get_dist_info()
    out = torch.full((world * 2,), -7.0)
    dist.all_gather_into_tensor(out, torch.tensor([rank, -rank], dtype=torch.float32))
    assert out.tolist() == [v for r in range(world) for v in (r, -r)], out
    stacked = np.zeros((world, 2, 1), np.int64)
    dist.all_gather_into_tensor(stacked, np.array([[rank], [rank * 10]]))
    assert stacked.tolist() == [[[r], [r * 10]] for r in range(world)], stacked
    # Rank r's output: the sum over ranks of their input piece r (input[i] = i + 100 * rank).
    piece = torch.empty(3)
    work = dist.reduce_scatter_tensor(piece, torch.arange(world * 3.0) + 100 * rank,
                                      async_op=True)
    work.wait()
    ranks_total = 100 * sum(range(world))
    assert piece.tolist() == [world * (rank * 3 + k) + ranks_total for k in range(3)], piece
    # Equal slices: rank r sends r * 100 + j to rank j.
    received = torch.empty(world, dtype=torch.int64)
    dist.all_to_all_single(received, torch.tensor([rank * 100 + j for j in range(world)]))
    assert received.tolist() == [s * 100 + rank for s in range(world)], received
    # Slices of their own sizes: rank r sends j + 1 values to rank j, so receives r + 1 from each.
    sent = np.array([rank * 1000 + j * 10 + k for j in range(world) for k in range(j + 1)])
    got = np.zeros(world * (rank + 1), np.int64)
    dist.all_to_all_single(got, sent, output_split_sizes=[rank + 1] * world,
                           input_split_sizes=[j + 1 for j in range(world)])
    assert got.tolist() == [s * 1000 + rank * 10 + k for s in range(world)
                            for k in range(rank + 1)], got
    for bad in (lambda: dist.all_gather_into_tensor(torch.empty(world * 2, 2).t(), torch.ones(2)),
                lambda: dist.all_gather_into_tensor(torch.empty(world * 2 + 1), torch.ones(2))):
        try:
            bad()
            raise AssertionError("accepted")
        except InvalidArgument as e:
            assert "output_tensor" in str(e), e


def torch_style_ops():
    rank, world = dist.get_dist_info()
    r = torch.tensor([float(rank)])
    dist.reduce(r, dst=0, op="sum")
    if rank == 0:
        assert r.item() == sum(range(world)), r
    out = torch.empty(2)
    scatter_list = [torch.tensor([float(i), float(i) * 10]) for i in range(world)] if rank == 0 else None
    dist.scatter(out, scatter_list, src=0)
    assert out.tolist() == [float(rank), float(rank) * 10], out
    outs = [torch.empty(1, dtype=torch.int64) for _ in range(world)]
    ins = [torch.tensor([rank * 100 + i]) for i in range(world)]
    dist.all_to_all(outs, ins)
    assert [o.item() for o in outs] == [i * 100 + rank for i in range(world)], outs
    # Piece j of rank r holds r + 10 j: rank j's reduced piece is sum(r) + 10 j * world.
    piece = torch.empty(3)
    dist.reduce_scatter(piece, [torch.full((3,), rank + 10.0 * j) for j in range(world)])
    want = sum(range(world)) + 10.0 * rank * world
    assert piece.tolist() == [want] * 3, piece


def point_to_point():
    rank, world = dist.get_dist_info()
    if world < 2:
        return
    right, left = (rank + 1) % world, (rank - 1) % world
    send = torch.tensor([rank * 7.0])
    recv = torch.empty(1)
    works = [dist.isend(send, right), dist.irecv(recv, left)]
    for work in works:
        work.wait()
    assert recv.item() == left * 7.0, recv
    if rank == 0:
        got = np.empty(2, dtype=np.int32)
        senders = sorted(dist.recv(got) for _ in range(world - 1))
        assert senders == list(range(1, world)), senders
    else:
        dist.send(np.array([rank, rank], dtype=np.int32), 0)


def async_work():
    rank, world = dist.get_dist_info()
    t = torch.ones(3) * rank
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed()
    assert t.tolist() == [float(sum(range(world)))] * 3, t


def objects():
    rank, world = dist.get_dist_info()
    got = dist.all_gather_object({"rank": rank, "name": "x" * rank, "none": None})
    assert got == [{"rank": r, "name": "x" * r, "none": None} for r in range(world)], got
    data = [rank, "from", {rank}] if rank == 1 % world else [None]
    dist.broadcast_object_list(data, src=1 % world)
    assert data == [1 % world, "from", {1 % world}], data
    at_root = dist.gather_object(("r", rank), dst=0)
    assert at_root == ([("r", r) for r in range(world)] if rank == 0 else None), at_root
    seed = dist.sync_random_seed()
    seeds = dist.all_gather_object(seed)
    assert len(set(seeds)) == 1 and 0 <= seed < 2**31, seeds
    d = {"loss": torch.tensor(float(rank)), "acc": torch.tensor([1.0, rank])}
    dist.all_reduce_dict(d, op="mean")
    assert d["loss"].item() == sum(range(world)) / world, d
    assert d["acc"].tolist() == [1.0, sum(range(world)) / world], d
    flags = {"any_nan": torch.tensor([rank == world - 1]), "all_ok": torch.tensor(rank >= 0)}
    dist.all_reduce_dict(flags, op="max")
    assert flags["any_nan"].tolist() == [True] and flags["all_ok"].item() is True, flags
    assert all(v.dtype == torch.bool for v in flags.values()), flags


def _typed_values(rank):
    """Values whose types must come back exactly: plain ones (the plain format) and ones that only
    pickle keeps (numpy values, bytearray, dict subclasses), built from the rank alone."""
    shared = [rank, "shared"]
    cyclic = [rank]
    cyclic.append(cyclic)
    return {
        "plain": {"int": rank, "bool": rank % 2 == 0, "big": 2**100 + rank, "float": rank / 4,
                  "neg_zero": -0.0, "nan": float("nan"), "complex": complex(rank, 1),
                  "str": f"r{rank} é", "bytes": bytes([rank, 255]), "none": None,
                  "tuple": (rank, (rank,)), "list": [rank, [rank]], "set": {rank, -rank - 1},
                  "frozenset": frozenset({rank})},
        "shared": [shared, shared],
        "cyclic": cyclic,
        "pickled": {"array": np.arange(3, dtype=np.int16) + rank, "scalar": np.float64(rank),
                    "bytearray": bytearray(b"ab"),
                    "ordered": collections.OrderedDict([("b", rank), ("a", 0)])},
    }


def _same(a, b):
    """Equal, with the same type at every level (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.tolist() == b.tolist()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def object_types():
    rank, world = dist.get_dist_info()
    got = dist.all_gather_object(_typed_values(rank))
    for r, value in enumerate(got):
        want = _typed_values(r)
        for key in ("plain", "pickled"):
            assert _same(value[key], want[key]), (r, key, value[key], want[key])
        assert value["shared"][0] is value["shared"][1] and value["shared"][0] == [r, "shared"]
        assert value["cyclic"][1] is value["cyclic"] and value["cyclic"][0] == r
    at_root = dist.gather_object(_typed_values(rank)["plain"], dst=0)
    if rank == 0:
        assert all(_same(v, _typed_values(r)["plain"]) for r, v in enumerate(at_root)), at_root


def _metrics(rank, entries):
    return {f"k{i}": [rank + 0.5 * i, i, f"v{rank}"] for i in range(entries)}


def large_objects():
    """Plain payloads past what the exchange's heads carry at first: sizes that differ by rank,
    then grow, stay steady (one collective a call once the heads have grown) and shrink."""
    rank, world = dist.get_dist_info()
    for entries in ([300 * (r + 1) for r in range(world)], [2000] * world, [2000] * world,
                    [50] * world):
        got = dist.all_gather_object(_metrics(rank, entries[rank]))
        assert got == [_metrics(r, entries[r]) for r in range(world)], [len(g) for g in got]
        at_root = dist.gather_object(_metrics(rank, entries[rank]), dst=world - 1)
        if rank == world - 1:
            assert at_root == [_metrics(r, entries[r]) for r in range(world)]
        else:
            assert at_root is None


def collect_results(tmpdir):
    rank, world = dist.get_dist_info()
    part = [rank + world * i for i in range(3)] + [None]
    size = 3 * world
    for device in ("cpu", "gpu"):
        got = dist.collect_results(part, size, device=device,
                                   tmpdir=tmpdir if device == "cpu" else None)
        if rank == 0:
            assert got == list(range(size)), (device, got)
        else:
            assert got is None, got


def groups():
    rank, world = dist.get_dist_info()
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    if rank % 2 == 0:
        assert dist.get_rank(evens) == rank // 2
        assert dist.get_world_size(evens) == (world + 1) // 2
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=evens)
        assert t.item() == sum(r for r in range(world) if r % 2 == 0), t
        dist.barrier(evens)
    dist.barrier()


def side_groups():
    """A gloo group beside the world, whatever the world's backend (torch's new_group(backend=)):
    the whole world, then the odd ranks."""
    rank, world = dist.get_dist_info()
    cpu = dist.new_group(backend="GLOO")
    assert dist.get_backend(cpu) == "gloo" and dist.get_world_size(cpu) == world
    t = torch.tensor([rank + 1, 2 * rank], dtype=torch.int64)
    dist.all_reduce(t, group=cpu)
    assert t.tolist() == [world * (world + 1) // 2, world * (world - 1)], t
    names = dist.all_gather_object({"rank": rank, "name": f"r{rank}"}, group=cpu)
    assert names == [{"rank": r, "name": f"r{r}"} for r in range(world)], names
    if world == 1:
        return
    odds = dist.new_group([r for r in range(world) if r % 2 == 1], backend="gloo")
    if rank % 2 == 1:
        assert dist.get_rank(odds) == rank // 2
        v = np.array([float(rank)])
        dist.all_reduce(v, "max", group=odds)
        assert v.tolist() == [float(max(r for r in range(world) if r % 2 == 1))], v
    else:
        assert dist.get_rank(odds) == -1
    dist.barrier()


def run_all(tmpdir):
    for body in (tensor_all_reduce, tensor_broadcast_gather, gathered_dtypes_and_shapes,
                 mmengine_helpers, torch_tensor_forms, torch_style_ops, point_to_point,
                 async_work, objects, object_types, large_objects, groups, side_groups):
        body()
    collect_results(tmpdir)
