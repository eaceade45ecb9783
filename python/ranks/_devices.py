"""MMEngine's device helpers for torch tensors, as mmengine.dist has them: the device a structure
of tensors lives on, and a copy of such a structure on another device (into ``out`` if given).
Their messages and errors are MMEngine's, which its users' tests match."""

from collections.abc import Iterable, Mapping


def _torch():
    import torch
    return torch


def get_data_device(data):
    """The device of every tensor in ``data`` (a tensor, or a mapping or sequence of them, nested);
    ValueError when they differ or a container is empty, TypeError for anything else."""
    torch = _torch()
    if isinstance(data, torch.Tensor):
        return data.device
    if isinstance(data, Mapping) or (isinstance(data, Iterable) and not isinstance(data, str)):
        values = data.values() if isinstance(data, Mapping) else data
        devices = [get_data_device(value) for value in values]
        if not devices:
            raise ValueError("data should not be empty.")
        if any(device != devices[0] for device in devices):
            raise ValueError(f"device type in data should be consistent, but got {devices}")
        return devices[0]
    raise TypeError(f"data should be a Tensor, sequence of tensor or dict, but got {data}")


def cast_data_device(data, device, out=None):
    """``data`` with every tensor on ``device`` (a tensor already there is returned as it is); with
    ``out`` (the same structure), each result is also copied into out's tensor."""
    torch = _torch()
    device = torch.device(device)
    if out is not None:
        if type(data) is not type(out):
            raise TypeError(f"out should be the same type with data, but got data is {type(data)} "
                            f"and out is {type(out)}")
        if isinstance(out, set):
            raise TypeError("out should not be a set")
    if isinstance(data, torch.Tensor):
        moved = data if get_data_device(data) == device else data.to(device)
        if out is not None:
            out.copy_(moved)
        return moved
    if isinstance(data, Mapping):
        if out is not None and len(data) != len(out):
            raise ValueError("length of data and out should be same, but got "
                             f"{len(data)} and {len(out)}")
        moved = {key: cast_data_device(value, device, None if out is None else out[key])
                 for key, value in data.items()}
        if not moved:
            raise ValueError("data should not be empty")
        return type(data)(moved)  # type: ignore[call-arg]
    if isinstance(data, Iterable) and not isinstance(data, str) and not _is_numpy(data):
        if out is None:
            moved = [cast_data_device(value, device) for value in data]
        else:  # as MMEngine: the shorter of the two decides
            moved = [cast_data_device(value, device, target) for value, target in zip(data, out)]
        if not moved:
            raise ValueError("data should not be empty")
        return type(data)(moved)  # type: ignore[call-arg]
    raise TypeError(f"data should be a Tensor, list of tensor or dict, but got {data}")


def _is_numpy(data):
    return type(data).__module__ == "numpy"
