"""How the collectives' tensors are cut and put together: the pieces a gather writes (the rows of
one block), a contiguous tensor's equal or dim-0 pieces (views that torch's single-tensor
collectives read and write in place), and the buckets all_reduce_params flattens. Torch tensors
and numpy arrays alike."""

from ranks.errors import InvalidArgument


def rows_like(data, count):
    """count new tensors of data's shape, dtype and device: the rows of one block, so that a
    gather writes every member's piece in place (no staging buffer, no copy out of it) and the
    call allocates once. Each row is a tensor of its own to the caller; the block lives as long
    as any row."""
    import numpy
    if not hasattr(type(data), "new_empty"):
        block = numpy.empty((count, *data.shape), dtype=data.dtype)
        return [block[i, ...] for i in range(count)]  # views, 0-d ones too
    nbytes = count * data.numel() * data.element_size()
    if data.device.type != "cpu" or nbytes == 0:  # torch's own allocator, its cache on a GPU
        return list(data.new_empty((count, *data.shape)).unbind(0))
    # A torch cpu block's bytes come from numpy (malloc): torch asks for 64-byte aligned memory,
    # which glibc seldom finds in the block freed by the call before, so a large block was fresh
    # pages every call (an 8 MiB one: 600-1,300 page faults, 9-17 ms on a virtual machine).
    import torch
    raw = torch.from_numpy(numpy.empty(nbytes, numpy.uint8))
    return list(raw.view(data.dtype).view(count, *data.shape).unbind(0))


def is_contiguous(tensor):
    if hasattr(type(tensor), "new_empty"):
        return tensor.is_contiguous()
    return tensor.flags["C_CONTIGUOUS"]


def equal_pieces(tensor, count, like, what):
    """count views of tensor's consecutive equal parts, each of like's shape: the collective
    writes or reads tensor itself."""
    if not is_contiguous(tensor):
        raise InvalidArgument(f"{what} must be contiguous: its pieces are written in place")
    flat = tensor.reshape(-1)  # a view: tensor is contiguous
    each = numel(like)
    if flat.shape[0] != count * each:
        raise InvalidArgument(f"{what} has {flat.shape[0]} elements; it needs {count} x {each} "
                              f"(the group's size times the other tensor's)")
    return [flat[i * each:(i + 1) * each].reshape(like.shape) for i in range(count)]


def dim0_pieces(tensor, sizes, count, what):
    """Views of tensor's consecutive dim-0 slices: count equal ones, or of the given sizes."""
    if not is_contiguous(tensor) or len(tensor.shape) == 0:
        raise InvalidArgument(f"{what} must be contiguous with at least one dimension")
    rows = tensor.shape[0]
    if sizes is None:
        if rows % count != 0:
            raise InvalidArgument(f"{what}'s first dimension ({rows}) does not divide into the "
                                  f"group's {count} ranks; give its split sizes")
        sizes = [rows // count] * count
    sizes = list(sizes)
    if len(sizes) != count or sum(sizes) != rows or min(sizes) < 0:
        raise InvalidArgument(f"{what}'s split sizes {sizes} must be {count} counts >= 0 adding "
                              f"up to its first dimension ({rows})")
    starts = [sum(sizes[:i]) for i in range(count)]
    return [tensor[start:start + n] for start, n in zip(starts, sizes)]


def buckets(tensors, bucket_size_mb):
    """Tensors grouped by (type, dtype, device) in first-seen order, each group cut before a
    tensor that would take its bucket past bucket_size_mb MiB (if positive)."""
    limit = bucket_size_mb * 1024 * 1024 if bucket_size_mb > 0 else None
    groups = {}  # key: [[bytes, tensors], ...]
    for tensor in tensors:
        key = (type(tensor), str(tensor.dtype), str(getattr(tensor, "device", "cpu")))
        buckets = groups.setdefault(key, [[0, []]])
        if limit is not None and buckets[-1][1] and buckets[-1][0] + nbytes(tensor) > limit:
            buckets.append([0, []])
        buckets[-1][0] += nbytes(tensor)
        buckets[-1][1].append(tensor)
    return [bucket for buckets in groups.values() for _, bucket in buckets]


def flatten(bucket):
    if hasattr(type(bucket[0]), "new_empty"):
        import torch
        return torch.cat([t.reshape(-1) for t in bucket])
    import numpy
    return numpy.concatenate([t.reshape(-1) for t in bucket])


def numel(tensor):
    return tensor.numel() if hasattr(type(tensor), "new_empty") else tensor.size


def nbytes(tensor):
    return numel(tensor) * (tensor.element_size() if hasattr(type(tensor), "new_empty")
                             else tensor.itemsize)
