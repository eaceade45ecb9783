"""A torch.distributed program, written as torch users write one, on the backend "ranks" (or
the one TORCH_JOB_BACKEND names: "gloo" runs the same checks on torch's own gloo, the
reference). Run by the tests under torchrun, `ranks run` and mpirun (RANKS_BACKEND=mpi).

Every expected value is computed here from the ranks' numbers, independently of any backend;
DDP's parameters are checked against the same model trained in one process on the whole batch
(DDP averages the gradients of equal shards: the same step). Prints "torch_job: N ranks ok".
"""

import os
import sys

import torch
import torch.distributed as dist

if "ranks" not in dist.Backend.backend_list:
    import ranks.torch  # noqa: F401  (torch < 2.5, or ranks not installed by pip)

BACKEND = os.environ.get("TORCH_JOB_BACKEND", "ranks")


def expect(what, got, want):
    if not torch.equal(got, want):
        sys.exit(f"torch_job rank {dist.get_rank()}: {what}: got {got.tolist()}, "
                 f"want {want.tolist()}")


def collectives(rank, world):
    everyone = torch.arange(1, world + 1, dtype=torch.float32)  # rank r holds r + 1

    t = torch.full((3,), rank + 1.0)
    dist.all_reduce(t)
    expect("all_reduce sum", t, torch.full((3,), everyone.sum().item()))
    t = torch.full((2,), rank + 1.0)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    expect("all_reduce max", t, torch.full((2,), float(world)))
    t = torch.full((2,), rank + 1.0)
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    expect("all_reduce product", t, torch.full((2,), everyone.prod().item()))
    t = torch.full((2,), rank + 1.0)
    if BACKEND == "gloo":  # torch's gloo has no AVG
        dist.all_reduce(t)
        t.div_(world)
    else:
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    expect("all_reduce avg", t, torch.full((2,), everyone.mean().item()))
    t = torch.tensor([1 << rank], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.BOR)
    expect("all_reduce bor", t, torch.tensor([(1 << world) - 1]))

    work = dist.all_reduce(torch.ones(4), async_op=True)
    work.wait()
    if not work.is_completed():
        sys.exit("torch_job: a waited all_reduce is not completed")

    gathered = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(gathered, torch.full((2,), float(rank)))
    for r, piece in enumerate(gathered):
        expect(f"all_gather piece {r}", piece, torch.full((2,), float(r)))

    flat = torch.zeros(world * 2)
    dist.all_gather_into_tensor(flat, torch.full((2,), float(rank)))
    expect("all_gather_into_tensor", flat, torch.arange(world).float().repeat_interleave(2))

    out = torch.zeros(2)
    dist.reduce_scatter(out, [torch.full((2,), float(rank * world + i)) for i in range(world)])
    want = sum(float(r * world + rank) for r in range(world))
    expect("reduce_scatter", out, torch.full((2,), want))

    out = torch.zeros(1)
    dist.reduce_scatter_tensor(out, torch.arange(world).float() + rank)
    expect("reduce_scatter_tensor", out, torch.tensor([float(rank * world + sum(range(world)))]))

    t = torch.full((3,), float(rank))
    dist.broadcast(t, src=world - 1)
    expect("broadcast", t, torch.full((3,), float(world - 1)))

    t = torch.full((2,), rank + 1.0)
    dist.reduce(t, dst=0)
    if rank == 0:
        expect("reduce", t, torch.full((2,), everyone.sum().item()))

    parts = [torch.zeros(1) for _ in range(world)] if rank == 1 % world else None
    dist.gather(torch.tensor([rank * 10.0]), parts, dst=1 % world)
    if parts is not None:
        expect("gather", torch.cat(parts), torch.arange(world).float() * 10)

    out = torch.zeros(2)
    pieces = [torch.full((2,), 100.0 + r) for r in range(world)] if rank == 0 else None
    dist.scatter(out, pieces, src=0)
    expect("scatter", out, torch.full((2,), 100.0 + rank))

    outs = [torch.zeros(1) for _ in range(world)]
    dist.all_to_all(outs, [torch.tensor([rank * 100.0 + r]) for r in range(world)])
    expect("all_to_all", torch.cat(outs), torch.arange(world).float() * 100 + rank)

    # all_to_all_single with uneven splits: rank r sends r + 1 copies of (10 r + dst) to dst.
    send = torch.cat([torch.full((rank + 1,), 10.0 * rank + d) for d in range(world)])
    recv = torch.zeros(sum(s + 1 for s in range(world)))
    dist.all_to_all_single(recv, send, output_split_sizes=[s + 1 for s in range(world)],
                           input_split_sizes=[rank + 1] * world)
    want = torch.cat([torch.full((s + 1,), 10.0 * s + rank) for s in range(world)])
    expect("all_to_all_single", recv, want)

    dist.barrier()


def point_to_point(rank, world):
    right, left = (rank + 1) % world, (rank - 1) % world
    got = torch.zeros(2)
    # The receive first on every rank: it must not block the send behind it.
    requests = dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, left),
                                       dist.P2POp(dist.isend, torch.full((2,), float(rank)),
                                                  right)])
    for request in requests:
        request.wait()
    expect("batch_isend_irecv", got, torch.full((2,), float(left)))

    if rank == 0:
        dist.send(torch.tensor([42.0]), dst=world - 1, tag=3)
    if rank == world - 1:
        got = torch.zeros(1)
        dist.recv(got, src=0, tag=3)
        expect("send/recv", got, torch.tensor([42.0]))


def objects(rank, world):
    everyone = [None] * world
    dist.all_gather_object(everyone, {"rank": rank, "name": f"r{rank}"})
    if everyone != [{"rank": r, "name": f"r{r}"} for r in range(world)]:
        sys.exit(f"torch_job: all_gather_object gave {everyone}")
    items = [f"from {rank}", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(items, src=0)
    if items != ["from 0", 0]:
        sys.exit(f"torch_job: broadcast_object_list gave {items}")
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(("t", rank), gathered, dst=0)
    if rank == 0 and gathered != [("t", r) for r in range(world)]:
        sys.exit(f"torch_job: gather_object gave {gathered}")


def subgroup(rank, world):
    evens = list(range(0, world, 2))
    group = dist.new_group(evens)
    if rank in evens:
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=group)
        expect("all_reduce in the even ranks' group", t, torch.tensor([float(sum(evens))]))
        if dist.get_rank(group) != evens.index(rank):
            sys.exit(f"torch_job: rank {rank} is {dist.get_rank(group)} in the even group")


def ddp(rank, world):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    reference.load_state_dict(model.state_dict())
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(4 * world, 4, generator=generator)
    targets = torch.randn(4 * world, 1, generator=generator)

    wrapped = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    shard = slice(4 * rank, 4 * (rank + 1))
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(wrapped(inputs[shard]), targets[shard]).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        torch.nn.functional.mse_loss(reference(inputs), targets).backward()
        reference_optimizer.step()
    for (name, got), want in zip(model.state_dict().items(), reference.state_dict().values()):
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
            sys.exit(f"torch_job rank {rank}: DDP's {name} differs from one process's training "
                     f"by {(got - want).abs().max().item()}")


def main():
    if "OMPI_COMM_WORLD_RANK" in os.environ:  # under mpirun, as MMEngine's init_dist("mpi")
        os.environ.setdefault("RANK", os.environ["OMPI_COMM_WORLD_RANK"])
        os.environ.setdefault("WORLD_SIZE", os.environ["OMPI_COMM_WORLD_SIZE"])
        os.environ.setdefault("LOCAL_RANK", os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])
    if len(sys.argv) > 1:  # an init_method (file://...): rank and size as arguments
        dist.init_process_group(BACKEND, init_method=sys.argv[1],
                                rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group(BACKEND)
    rank, world = dist.get_rank(), dist.get_world_size()
    if dist.get_backend() != BACKEND:
        sys.exit(f"torch_job: get_backend() is {dist.get_backend()!r}, not {BACKEND!r}")
    collectives(rank, world)
    point_to_point(rank, world)
    objects(rank, world)
    subgroup(rank, world)
    ddp(rank, world)
    dist.destroy_process_group()
    if rank == 0:
        print(f"torch_job: {world} ranks ok", flush=True)


if __name__ == "__main__":
    main()
