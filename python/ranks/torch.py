"""torch.distributed's backend ``"ranks"``: torch's process groups on ranks' runtime.

    import torch.distributed as dist
    dist.init_process_group("ranks")        # torch 2.5+: registered when torch is imported
                                            # torch 2.4: ``import ranks.torch`` first

Every group torch makes with this backend is a ``ProcessGroup`` whose collectives and
point-to-point calls run on ranks' own backends (gloo by default; ``RANKS_BACKEND=mpi`` under
mpirun), with ranks' checks: mismatched collectives named with ``RANKS_DEBUG=detail``, stuck
ranks named at a timeout, the call site of each op (the first frame outside torch and ranks).
The world rendezvouses through the store torch hands the backend (env://, tcp://, file://, a
store of the program's own, or torchrun's agent store), each sub-group through its own.

torch's methods map onto ranks' ops through one table, ``_OPS``: a row names the torch methods
(the names of torch 2.4 and those of later releases) and says how their arguments become one
ranks op per tensor. Collectives complete before they return (their Work is done: DDP's reducer
waits on its future); sends and receives stay in flight until waited, so that a batch of them
(``batch_isend_irecv``) cannot block on its own order. CPU tensors only.
"""

import datetime
import os

import torch
import torch.distributed as _torch_dist
from torch._C._distributed_c10d import _create_work_from_future

from ranks import _core
from ranks.errors import InvalidArgument, Unsupported

NAME = "ranks"

# An op's call site is the program's line, not torch's (nor ranks'): for DDP's gradient buckets,
# the line that called backward().
_core.skip_frames_of(os.path.dirname(os.path.abspath(torch.__file__)))

_RED_OP_NAMES = {
    "SUM": "sum", "AVG": "mean", "PRODUCT": "product", "MIN": "min", "MAX": "max",
    "BAND": "band", "BOR": "bor", "BXOR": "bxor",
}


# torch's reduce op types (RedOpType members are hashable) to ranks' names: one lookup per op.
_RED_OPS = {getattr(_torch_dist.ReduceOp.RedOpType, torch_name): name
            for torch_name, name in _RED_OP_NAMES.items()
            if hasattr(_torch_dist.ReduceOp.RedOpType, torch_name)}


def _reduce_op(opts):
    """The ranks op name of torch's reduce op (opts.reduceOp)."""
    op = opts.reduceOp
    op = getattr(op, "op", op)
    name = _RED_OPS.get(op)
    if name is None:
        name = _RED_OP_NAMES.get(getattr(op, "name", str(op)).rsplit(".", 1)[-1])
    if name is None:
        raise Unsupported(f"the {NAME} backend has no reduce op {op} (it has "
                          f"{', '.join(sorted(_RED_OP_NAMES))})")
    return name


def _done(outputs):
    """A Work that is already complete, its future's value the op's outputs (DDP's reducer reads
    them; comm hooks chain on the future)."""
    future = torch.futures.Future()
    future.set_result(outputs)
    return _create_work_from_future(future)


class _InFlight(_torch_dist.Work):
    """A send or receive still in flight: wait() ends it, as torch's own Works do."""

    def __init__(self, work, tensors):
        super().__init__()
        self._work = work
        self._tensors = tensors
        self._waited = False

    def wait(self, timeout=None):
        if not self._waited:
            seconds = None
            if isinstance(timeout, datetime.timedelta) and timeout.total_seconds() > 0:
                seconds = timeout.total_seconds()
            self._work.wait(seconds)
            self._waited = True
        return True

    def is_completed(self):
        return self._waited or self._work.is_completed()

    def is_success(self):
        return self.is_completed()

    def exception(self):
        return None

    def source_rank(self):
        self.wait()
        return self._work.source_rank()

    def _source_rank(self):
        return self.source_rank()

    def result(self):
        self.wait()
        return self._tensors

    def get_future(self):
        self.wait()
        future = torch.futures.Future()
        future.set_result(self._tensors)
        return future


def _cpu(tensor, what):
    if tensor.device.type != "cpu":
        raise Unsupported(f"the {NAME} backend takes cpu tensors; {what} is on {tensor.device} "
                          f"(use nccl for cuda tensors)")
    return tensor


def _all_cpu(tensors, what):
    for tensor in tensors:
        _cpu(tensor, what)
    return tensors


# One row per op: the torch method names (torch 2.4's first, then later releases' names for the
# same call), and the function that runs it on ranks group `g` from torch's arguments, returning
# the tensors the op wrote (a collective's future value) or a Work still in flight.
def _allreduce(g, tensors, opts=None):
    op = _reduce_op(opts) if opts is not None else "sum"
    for tensor in _all_cpu(tensors, "allreduce's tensor"):
        _core.all_reduce(tensor, op, g)
    return tensors


def _allgather(g, output_lists, inputs, opts=None):
    for outputs, tensor in zip(output_lists, _all_cpu(inputs, "allgather's input")):
        _core.all_gather(_all_cpu(outputs, "allgather's output"), tensor, g, False)
    return output_lists


def _ranks_dist():
    """ranks.dist, imported on first use, not with this module: torch 2.5+ imports this module
    from its own import (the entry point), and under `ranks sim` the script's own first import
    of ranks.dist is what runs it simulated (ranks/__init__.py)."""
    from ranks import dist
    return dist


def _allgather_into_tensor(g, output, tensor, opts=None):
    _ranks_dist().all_gather_into_tensor(_cpu(output, "the output"), _cpu(tensor, "the input"),
                                         g)
    return [output]


def _allgather_into_tensor_coalesced(g, outputs, inputs, opts=None):
    for output, tensor in zip(outputs, inputs):
        _allgather_into_tensor(g, output, tensor)
    return outputs


def _reduce_scatter(g, outputs, input_lists, opts=None):
    op = _reduce_op(opts)
    for output, inputs in zip(_all_cpu(outputs, "reduce_scatter's output"), input_lists):
        _core.reduce_scatter(output, _all_cpu(list(inputs), "reduce_scatter's input"), op, g,
                             False)
    return outputs


def _reduce_scatter_tensor(g, output, tensor, opts=None):
    _ranks_dist().reduce_scatter_tensor(_cpu(output, "the output"), _cpu(tensor, "the input"),
                                      _reduce_op(opts), g)
    return [output]


def _reduce_scatter_tensor_coalesced(g, outputs, inputs, opts=None):
    for output, tensor in zip(outputs, inputs):
        _reduce_scatter_tensor(g, output, tensor, opts)
    return outputs


def _broadcast(g, tensors, opts=None):
    root = opts.rootRank if opts is not None else 0
    for tensor in _all_cpu(tensors, "broadcast's tensor"):
        _core.broadcast(tensor, root, g, False)
    return tensors


def _reduce(g, tensors, opts=None):
    for tensor in _all_cpu(tensors, "reduce's tensor"):
        _core.reduce(tensor, opts.rootRank, _reduce_op(opts), g, False)
    return tensors


def _gather(g, output_lists, inputs, opts=None):
    root = opts.rootRank
    is_root = _core.get_rank(g) == root
    for index, tensor in enumerate(_all_cpu(inputs, "gather's input")):
        outputs = output_lists[index] if is_root else []
        _core.gather(_all_cpu(list(outputs), "gather's output"), tensor, root, g, False)
    return output_lists


def _scatter(g, outputs, input_lists, opts=None):
    root = opts.rootRank
    is_root = _core.get_rank(g) == root
    for index, output in enumerate(_all_cpu(outputs, "scatter's output")):
        inputs = list(input_lists[index]) if is_root else []
        _core.scatter(output, _all_cpu(inputs, "scatter's input"), root, g, False)
    return outputs


def _alltoall(g, outputs, inputs, opts=None):
    _core.all_to_all(_all_cpu(list(outputs), "alltoall's output"),
                     _all_cpu(list(inputs), "alltoall's input"), g, False)
    return outputs


def _alltoall_single(g, output, tensor, output_split_sizes, input_split_sizes, opts=None):
    _ranks_dist().all_to_all_single(_cpu(output, "the output"), _cpu(tensor, "the input"),
                                  list(output_split_sizes) or None,
                                  list(input_split_sizes) or None, g)
    return [output]


def _barrier(g, opts=None):
    _core.barrier(g)
    return []


def _monitored_barrier(g, timeout=None, wait_all_ranks=False):
    # ranks' barrier names the ranks that never arrived when it times out, which is what
    # torch's monitored_barrier is for.
    del timeout, wait_all_ranks
    _core.barrier(g)
    return []


def _send(g, tensors, dst, tag=0):
    (tensor,) = _all_cpu(tensors, "send's tensor")
    return _InFlight(_ranks_dist().isend(tensor, dst, g, tag), tensors)


def _recv(g, tensors, src, tag=0):
    (tensor,) = _all_cpu(tensors, "recv's tensor")
    return _InFlight(_ranks_dist().irecv(tensor, src, g, tag), tensors)


def _recv_anysource(g, tensors, tag=0):
    return _recv(g, tensors, None, tag)


_OPS = (
    (("allreduce",), _allreduce),
    (("allreduce_coalesced",), _allreduce),
    (("allgather",), _allgather),
    (("allgather_coalesced",), _allgather),
    (("_allgather_base", "all_gather_single"), _allgather_into_tensor),
    (("allgather_into_tensor_coalesced", "all_gather_single_coalesced"),
     _allgather_into_tensor_coalesced),
    (("reduce_scatter",), _reduce_scatter),
    (("_reduce_scatter_base", "reduce_scatter_single"), _reduce_scatter_tensor),
    (("reduce_scatter_tensor_coalesced", "reduce_scatter_single_coalesced"),
     _reduce_scatter_tensor_coalesced),
    (("broadcast",), _broadcast),
    (("reduce",), _reduce),
    (("gather",), _gather),
    (("scatter",), _scatter),
    (("alltoall",), _alltoall),
    (("alltoall_base", "all_to_all_single"), _alltoall_single),
    (("barrier",), _barrier),
    (("monitored_barrier",), _monitored_barrier),
    (("send",), _send),
    (("recv",), _recv),
    (("recv_anysource",), _recv_anysource),
)


def _method(run):
    def method(self, *args, **kwargs):
        result = run(self._group, *args, **kwargs)
        return result if isinstance(result, _torch_dist.Work) else _done(result)
    method.__name__ = run.__name__.lstrip("_")
    return method


class ProcessGroup(_torch_dist.ProcessGroup):
    """A torch process group on a ranks group (None: ranks' world)."""

    def __init__(self, group, rank, size):
        super().__init__(rank, size)
        self._group = group

    def getBackendName(self):  # noqa: N802 (torch's name)
        return NAME

    def name(self):
        return NAME

    def shutdown(self):
        if self._group is None and _core.is_initialized():
            _core.destroy_process_group()

    def abort(self):
        self.shutdown()

    def __repr__(self):
        return f"<ranks.torch.ProcessGroup rank {self.rank()} of {self.size()} on {self._group!r}>"


for _names, _run in _OPS:
    for _name in _names:
        setattr(ProcessGroup, _name, _method(_run))


def _backend_of_environment():
    backend = os.environ.get("RANKS_BACKEND", "").strip().lower()
    return backend or "gloo"


def _create(backend_options, _pg_options=None):
    """torch's creator (extended API): the world on its first call, a sub-group later."""
    store = backend_options.store
    rank, size = backend_options.group_rank, backend_options.group_size
    timeout = backend_options.timeout
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else None
    global_ranks = list(getattr(backend_options, "global_ranks_in_group", []) or [])
    if not _core.is_initialized():
        if global_ranks and global_ranks != list(range(size)):
            raise InvalidArgument(f"the {NAME} backend's first group must be the world, got ranks "
                                  f"{global_ranks}")
        _core.init_process_group(_backend_of_environment(), None, size, rank, seconds, store)
        return ProcessGroup(None, rank, size)
    world = _core.get_world_size(None)
    if not global_ranks or global_ranks == list(range(world)) and size == world:
        members = list(range(world))
    else:
        members = global_ranks
    if len(members) != size:
        raise InvalidArgument(f"torch asked for a group of {size} ranks, with members {members}")
    group = _core.new_group_of_members(members, str(backend_options.group_id), store)
    return ProcessGroup(group, rank, size)


def register():
    """Registers the backend with torch.distributed (again: nothing)."""
    if NAME in _torch_dist.Backend.backend_list:
        return
    _torch_dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu"])


def _autoload():
    """torch's entry point (group "torch.backends"): runs at the end of ``import torch``. It must
    not fail the import: a problem here is a warning, and init_process_group("ranks") then says
    the backend is unknown."""
    try:
        register()
    except Exception as error:  # noqa: BLE001 (the import of torch must go on)
        import warnings
        warnings.warn(f"ranks: the torch.distributed backend '{NAME}' was not registered: "
                      f"{error}", RuntimeWarning, stacklevel=2)


register()
