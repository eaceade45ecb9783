"""MMEngine's ``mmengine.dist`` API (names, signatures, defaults, non-distributed fallbacks),
plus torch.distributed's point-to-point, reduce, scatter, reduce_scatter, all_to_all, their
single-tensor forms (all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single) and async
work handles, over ranks' C++ runtime: real gloo, mpi and nccl processes, or simulated ranks.

Tensors are torch tensors (CPU or CUDA) or numpy arrays, shared with the runtime through DLPack:
in-place collectives write into the caller's memory, nothing is copied on the way in. Objects
travel pickled, as in MMEngine and torch, or, when made only of plain built-in values (dict,
list, tuple, set, str, bytes, int, float, complex, bool, None), in ranks' faster plain format,
whose peer streams are checked as they are read; a pickled payload is trusted exactly as
``pickle.loads`` trusts its input, so run jobs only with peers you trust.

Where MMEngine has a trap, this module does what ranks' C++ API does (docs/python.md lists them):
``src``/``dst`` are ranks within ``group`` everywhere; ``collect_results`` keeps ``None`` results;
``sync_random_seed`` draws from ranks' per-rank generator (seeded per rank in the simulator), not
from numpy's global one; ``get_local_rank``/``get_local_size`` come from the launcher;
``init_local_group`` makes every node's group on every rank, as new_group needs.
"""

import functools
import os
import threading

import ranks
from ranks import _core, _exit, _pieces
from ranks._devices import cast_data_device, get_data_device  # noqa: F401  (MMEngine's names)
from ranks.errors import Error, InvalidArgument

Work = _core.Work
Group = _core.Group

_LAUNCHERS = ("pytorch", "slurm", "mpi")


def _seconds(timeout):
    if timeout is None:
        return None
    if hasattr(timeout, "total_seconds"):  # datetime.timedelta, as torch takes it
        return timeout.total_seconds()
    return float(timeout)


def _init_timeout(timeout):
    """An init's timeout in seconds: the program's, else RANKS_TIMEOUT's (whole seconds, as a
    C++ program on ranks::main and `ranks sim` read it, so one job script serves real and
    simulated runs), else None (the default, 30 minutes)."""
    if timeout is not None:
        return _seconds(timeout)
    text = os.environ.get("RANKS_TIMEOUT", "").strip()
    if not text:
        return None
    try:
        seconds = int(text)
    except ValueError:
        raise InvalidArgument(f"environment variable RANKS_TIMEOUT='{text}' is not a whole "
                              f"number of seconds") from None
    if seconds <= 0:
        raise InvalidArgument(f"environment variable RANKS_TIMEOUT='{text}' must be positive")
    return float(seconds)


_op_name = _core.op_name_of  # a str, else InvalidArgument listing the ops


def _from_capsule(capsule, like):
    if hasattr(like, "new_empty"):
        from torch.utils import dlpack
        return dlpack.from_dlpack(capsule)

    class _Exported:  # numpy.from_dlpack takes an object with __dlpack__, not a capsule
        def __dlpack__(self, stream=None):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    import numpy
    return numpy.from_dlpack(_Exported())


def _dumps(value, api):
    """``value`` as the bytes an object collective carries: the plain format for plain built-in
    values, else pickle (python/src/plain_format.hpp says which, and how a receiver tells them
    apart)."""
    return _core.dumps(value, api)


# Initialisation ---------------------------------------------------------------------------------

def init_dist(launcher, backend="nccl", init_backend="torch", **kwargs):
    """Joins the job started by ``launcher`` ('pytorch', 'slurm' or 'mpi') over ``backend``.

    Under ``ranks sim`` every simulated rank is already in its world: this adopts it. Keyword
    arguments as torch's init_process_group takes them: ``timeout`` (seconds or a timedelta;
    without one, RANKS_TIMEOUT's seconds when it is set), ``init_method``; and MMEngine's
    ``port`` for slurm (else MASTER_PORT, else 29500).
    """
    del init_backend  # MMEngine's switch between torch and other runtimes: ranks is the runtime
    if launcher not in _LAUNCHERS:
        raise InvalidArgument(f"Invalid launcher type: {launcher}; expected one of "
                              f"{', '.join(_LAUNCHERS)}")
    if launcher == "slurm" and kwargs.get("port") is not None:
        os.environ["MASTER_PORT"] = str(kwargs["port"])  # as MMEngine's _init_dist_slurm
    _core.init_dist(launcher, backend, kwargs.get("init_method"),
                    _init_timeout(kwargs.get("timeout")))
    _exit.install()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1):
    """torch.distributed.init_process_group's subset: env://, tcp:// and file:// rendezvous.
    Without ``timeout``, RANKS_TIMEOUT's seconds when it is set."""
    _core.init_process_group(backend or "", init_method, world_size, rank,
                             _init_timeout(timeout))
    _exit.install()


infer_launcher = _core.infer_launcher
destroy_process_group = _core.destroy_process_group
is_initialized = _core.is_initialized


# Queries ------------------------------------------------------------------------------------------

def is_distributed():
    return _core.is_distributed()


def get_default_group():
    if not is_distributed():
        raise RuntimeError("Default process group has not been initialized, "
                           "please make sure to call init_process_group.")
    return None


def get_backend(group=None):
    return _core.get_backend(group)


def get_world_size(group=None):
    return _core.get_world_size(group)


def get_rank(group=None):
    return _core.get_rank(group)


def get_local_size():
    return _core.get_local_size()


def get_local_rank():
    return _core.get_local_rank()


class _RankState:
    """A value each rank has its own of: the process's where ranks are processes; under the
    simulator, where module globals are shared, the simulated rank's (each runs with its own
    thread state, so its own threading.local)."""

    def __init__(self):
        self._process = None
        self._simulated = threading.local()

    def get(self):
        if _core.simulating():
            return getattr(self._simulated, "value", None)
        return self._process

    def set(self, value):
        if _core.simulating():
            self._simulated.value = value
        else:
            self._process = value


_local_group = _RankState()  # made by init_local_group


def init_local_group(node_rank, num_gpus_per_node):
    """Makes the group of the ``num_gpus_per_node`` consecutive ranks of node ``node_rank``.

    Every rank makes every node's group, in node order (MMEngine makes only its own node's, which
    leaves the ranks of the other nodes waiting in new_group); each keeps its own node's.
    Not distributed: nothing to make."""
    if _local_group.get() is not None:
        raise InvalidArgument("init_local_group: the local group was made already")
    if not is_distributed():
        return
    world, rank = get_world_size(), get_rank()
    if num_gpus_per_node <= 0 or world % num_gpus_per_node != 0:
        raise InvalidArgument(f"init_local_group: {world} ranks do not make nodes of "
                              f"{num_gpus_per_node}")
    if rank // num_gpus_per_node != node_rank:
        raise InvalidArgument(f"init_local_group: rank {rank} is not on node {node_rank} of "
                              f"{num_gpus_per_node} ranks each")
    for node in range(world // num_gpus_per_node):
        first = node * num_gpus_per_node
        group = new_group(range(first, first + num_gpus_per_node))
        if node == node_rank:
            _local_group.set(group)


def get_local_group():
    """The group init_local_group made; None when not distributed."""
    if not is_distributed():
        return None
    if _local_group.get() is None:
        raise Error("Local process group is not created, please use `init_local_group` to "
                    "setup local process group.")
    return _local_group.get()


def get_comm_device(group=None):
    """The torch device ``group``'s backend communicates from: the current cuda device for nccl
    (cuda:<local rank> where torch has no cuda, as in the simulator), cpu otherwise."""
    import torch
    if get_backend(group) != "nccl":
        return torch.device("cpu")
    index = torch.cuda.current_device() if torch.cuda.is_available() else get_local_rank()
    return torch.device("cuda", index)


def get_dist_info(group=None):
    """(rank, world_size): rank first, as MMEngine has it."""
    return get_rank(group), get_world_size(group)


def is_main_process(group=None):
    return get_rank(group) == 0


def master_only(func):
    """Runs ``func`` on global rank 0 only; elsewhere the call returns None."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if is_main_process():
            return func(*args, **kwargs)
        return None

    return wrapper


def new_group(ranks=None, timeout=None, backend=None):
    """A group of the given global ranks (all ranks when None); every rank must call it.

    ``backend`` ("gloo", "nccl", "mpi", any case, or torch's ``Backend`` values): the group runs
    on that backend, under its rules, whatever the world's (a gloo group for CPU objects in an
    nccl job); None: the world's.
    """
    if not is_distributed():
        return None
    members = list(range(get_world_size())) if ranks is None else list(ranks)
    group = _core.new_group(members, None if backend is None else str(backend).lower())
    if timeout is not None and group.is_member:
        group.timeout = _seconds(timeout)
    return group


def _alone(group, op):
    """MMEngine's early return: world size 1, or not distributed. A thread that is none of a
    running simulation's ranks is no world of 1 (its process's rank would take part in the real
    run): its call is refused here as its op would be."""
    if get_world_size(group) > 1:
        return False
    _core.check_foreign_call(op)
    return True


def barrier(group=None):
    if is_distributed():
        _core.barrier(group)
    else:
        _core.check_foreign_call("barrier")


# Tensor collectives -------------------------------------------------------------------------------

# all_reduce(data, op="sum", group=None, async_op=False) is the C++ function itself (no frame of
# its own per call: python/src/ops.cpp).
all_reduce = _core.all_reduce


def all_gather(data, group=None):
    """Every member's ``data`` (same shape and dtype on all), in group-rank order."""
    size = get_world_size(group)
    if size <= 1 and _alone(group, "all_gather"):
        return [data]
    outputs = _pieces.rows_like(data, size)
    _core.all_gather(outputs, data, group, False)
    return outputs


def gather(data, dst=0, group=None):
    """Every member's ``data`` on ``dst`` (a rank within group); [] elsewhere."""
    size = get_world_size(group)
    if size <= 1 and _alone(group, "gather"):
        return [data]
    outputs = _pieces.rows_like(data, size) if get_rank(group) == dst else []
    _core.gather(outputs, data, dst, group, False)
    return outputs


def broadcast(data, src=0, group=None, async_op=False):
    """``src``'s ``data`` (a rank within group) into every member's, in place."""
    if _alone(group, "broadcast"):
        return _nothing_to_do(async_op)
    return _core.broadcast(data, src, group, async_op)


def reduce(data, dst=0, op="sum", group=None, async_op=False):
    op = _op_name(op)
    if _alone(group, "reduce"):
        return _nothing_to_do(async_op)
    return _core.reduce(data, dst, op, group, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    if _alone(group, "scatter"):
        if scatter_list:
            _copy_into(tensor, scatter_list[0])
        return _nothing_to_do(async_op)
    return _core.scatter(tensor, list(scatter_list or []), src, group, async_op)


def reduce_scatter(output, input_list, op="sum", group=None, async_op=False):
    op = _op_name(op)
    if _alone(group, "reduce_scatter"):
        _copy_into(output, input_list[0])
        return _nothing_to_do(async_op)
    return _core.reduce_scatter(output, list(input_list), op, group, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    if _alone(group, "all_to_all"):
        _copy_into(output_tensor_list[0], input_tensor_list[0])
        return _nothing_to_do(async_op)
    return _core.all_to_all(list(output_tensor_list), list(input_tensor_list), group, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """torch's: every member's ``input_tensor``, in group-rank order, into ``output_tensor``
    (contiguous, world size times the input's elements: stacked or concatenated), in place."""
    size = get_world_size(group)
    pieces = _pieces.equal_pieces(output_tensor, size, input_tensor, "output_tensor")
    if size <= 1:
        _copy_into(pieces[0], input_tensor)
        return _nothing_to_do(async_op)
    return _core.all_gather(pieces, input_tensor, group, async_op)


def reduce_scatter_tensor(output, input, op="sum", group=None, async_op=False):
    """torch's: ``input`` (contiguous, world size times ``output``'s elements) cut into equal
    pieces in group-rank order; rank r gets the reduction of every member's piece r."""
    op = _op_name(op)
    size = get_world_size(group)
    pieces = _pieces.equal_pieces(input, size, output, "input")
    if size <= 1:
        _copy_into(output, pieces[0])
        return _nothing_to_do(async_op)
    return _core.reduce_scatter(output, pieces, op, group, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """torch's: ``input``'s dim-0 slices (equal, or of input_split_sizes) go to the members in
    group-rank order; ``output``'s (equal, or of output_split_sizes) receive theirs, in place."""
    size = get_world_size(group)
    outputs = _pieces.dim0_pieces(output, output_split_sizes, size, "output")
    inputs = _pieces.dim0_pieces(input, input_split_sizes, size, "input")
    if size <= 1:
        _copy_into(outputs[0], inputs[0])
        return _nothing_to_do(async_op)
    return _core.all_to_all(outputs, inputs, group, async_op)


def _nothing_to_do(async_op):
    """What an op with nothing to do returns: a completed Work when async_op, as torch does."""
    return _core.completed_work() if async_op else None


def _copy_into(out, value):
    if hasattr(out, "copy_"):
        out.copy_(value)
    else:
        out[...] = value


def send(tensor, dst, group=None, tag=0):
    _core.send(tensor, dst, group, tag)


def recv(tensor, src=None, group=None, tag=0):
    """Receives into ``tensor``; ``src`` None: from any rank. Returns the sender's rank."""
    return _core.recv(tensor, -1 if src is None else src, group, tag)


def isend(tensor, dst, group=None, tag=0):
    return _core.isend(tensor, dst, group, tag)


def irecv(tensor, src=None, group=None, tag=0):
    return _core.irecv(tensor, -1 if src is None else src, group, tag)


def sync_random_seed(group=None):
    """Rank 0's random draw in [0, 2**31), the same on every member."""
    return _core.sync_random_seed(group)


# Object collectives -------------------------------------------------------------------------------

def broadcast_object_list(data, src=0, group=None):
    """``src``'s list of picklable objects into every member's list, in place."""
    assert isinstance(data, list)
    if _alone(group, "broadcast_object_list"):
        return
    mine = [_dumps(item, "broadcast_object_list") for item in data] if get_rank(group) == src else []
    received = _core.broadcast_object_list(mine, src, group)
    if get_rank(group) != src:
        data[:] = received


def all_gather_object(data, group=None):
    """Every member's picklable ``data``, in group-rank order."""
    if _alone(group, "all_gather_object"):
        return [data]
    return _core.all_gather_object(data, group)


def gather_object(data, dst=0, group=None):
    """Every member's picklable ``data`` on ``dst``; None elsewhere."""
    if _alone(group, "gather_object"):
        return [data]
    return _core.gather_object(data, dst, group)


def all_reduce_dict(data, op="sum", group=None):
    """Reduces every tensor value of ``data`` in one flattened all_reduce, keys sorted; ranks
    whose keys, shapes or dtypes differ get a Mismatch naming the difference."""
    assert isinstance(data, dict)
    op = _op_name(op)
    if _alone(group, "all_reduce_dict") or not data:
        return
    capsules = _core.all_reduce_dict(data, op, group)
    # Values are promoted to one dtype: bool only when all are, and bool comes back as its bytes.
    all_bool = all(str(value.dtype) in ("torch.bool", "bool") for value in data.values())
    for key, capsule in capsules.items():
        value = _from_capsule(capsule, data[key])
        data[key] = value.view(data[key].dtype) if all_bool else value


def all_reduce_params(params, coalesce=True, bucket_size_mb=-1, op="sum", group=None):
    """Reduces every tensor of ``params`` (torch parameters or buffers, or tensors) in place.

    coalesce: one all_reduce per bucket of tensors of one type, dtype and device, flattened
    (buckets of at most ``bucket_size_mb`` MiB when that is positive), else one per tensor. World
    size 1: ``params`` is not even iterated, as in MMEngine."""
    if _alone(group, "all_reduce_params"):
        return
    op = _op_name(op)
    tensors = [p.data if hasattr(type(p), "new_empty") else p for p in params]
    if not coalesce:
        for tensor in tensors:
            all_reduce(tensor, op, group)
        return
    for bucket in _pieces.buckets(tensors, bucket_size_mb):
        flat = _pieces.flatten(bucket)
        all_reduce(flat, op, group)
        offset = 0
        for tensor in bucket:
            piece = flat[offset:offset + _pieces.numel(tensor)].reshape(tensor.shape)
            if hasattr(type(tensor), "new_empty"):
                tensor.copy_(piece)
            else:
                tensor[...] = piece
            offset += _pieces.numel(tensor)


def collect_results(results, size, device="cpu", tmpdir=None):
    """Rank 0 gets every rank's part interleaved in MMEngine's order, truncated to ``size``
    (other ranks: None). ``None`` results are kept. device 'cpu': through a fresh directory under
    ``tmpdir`` (default ./.dist_test) shared by every rank; 'gpu': through the network."""
    if device not in ("cpu", "gpu"):
        raise NotImplementedError(f"device must be 'cpu' or 'gpu', but got {device}")
    if get_world_size() <= 1:
        return results[:size]
    return _core.collect_results([_dumps(item, "collect_results") for item in results], size,
                                 device, None if tmpdir is None else str(tmpdir))


def collect_results_cpu(result_part, size, tmpdir=None):
    return collect_results(result_part, size, "cpu", tmpdir)


def collect_results_gpu(result_part, size):
    return collect_results(result_part, size, "gpu")


def sleep(seconds):
    """Sleeps; a simulated rank advances its virtual clock instead."""
    _core.sleep(seconds)


def now():
    """Seconds since an arbitrary epoch; a simulated rank's virtual clock."""
    return _core.now()


# A script that imported torch (and with it ranks, through torch's entry point) before
# ranks.dist is simulated from here under `ranks sim`, once every name above is defined.
ranks._simulate_script_if_asked()
