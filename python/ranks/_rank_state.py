"""What each process of a real job has of its own, kept per rank thread while ranks are simulated
on threads (ranks._torch_sim installs them): the environment a launcher gives it, its random
generators, the module globals and class-level registries of the libraries it uses. Each piece
keeps its values in a threading.local, or is saved and restored around every turn where the
state lives in one process-wide place that cannot be made per thread (torch's default
generator, a module global)."""

import collections
import collections.abc
import importlib.abc
import importlib.machinery
import random
import sys
import threading

from ranks import _core


class RankEnviron(collections.abc.MutableMapping):
    """``os.environ`` during a run: on a rank thread, the process's variables with the rank's
    own over them (what it set, what it deleted, what torchrun would have given it); the
    process's own elsewhere."""

    _DELETED = object()

    def __init__(self, real):
        self._real = real
        self._local = threading.local()

    def enter_rank(self, variables):
        self._local.own = dict(variables)

    def _own(self):
        return getattr(self._local, "own", None)

    def __getitem__(self, key):
        own = self._own()
        if own is not None and key in own:
            if own[key] is self._DELETED:
                raise KeyError(key)
            return own[key]
        return self._real[key]

    def __setitem__(self, key, value):
        own = self._own()
        if own is None:
            self._real[key] = value
            return
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"str expected, not {type(key if not isinstance(key, str) else value).__name__}")
        own[key] = value

    def __delitem__(self, key):
        own = self._own()
        if own is None:
            del self._real[key]
            return
        if key not in self:
            raise KeyError(key)
        own[key] = self._DELETED

    def __iter__(self):
        own = self._own()
        if own is None:
            yield from self._real
            return
        for key in self._real:
            if own.get(key) is not self._DELETED:
                yield key
        for key, value in own.items():
            if key not in self._real and value is not self._DELETED:
                yield key

    def __len__(self):
        return sum(1 for _ in self)

    def copy(self):
        return dict(self)

    def __repr__(self):
        return f"environ({dict(self)!r})"


def launcher_variables():
    """What torchrun sets for the running simulated rank."""
    rank, world = _core.get_rank(None), _core.get_world_size(None)
    local_rank, local_size = _core.get_local_rank(), _core.get_local_size()
    per_node = max(local_size, 1)
    return {
        "RANK": str(rank), "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(local_size),
        "GROUP_RANK": str(rank // per_node), "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
    }


# Module globals a library keeps per process, as (module, name): each rank has its own value,
# the module's initial one (None) at its start, swapped in and out around every turn. The module
# need not be imported yet: it is looked for at every turn (one dictionary lookup).
_PER_RANK_GLOBALS = (("mmengine.dist.utils", "_LOCAL_PROCESS_GROUP"),)


class RankGlobals:
    """Each rank's own value of the _PER_RANK_GLOBALS."""

    def __init__(self):
        self._local = threading.local()

    def enter_rank(self):
        self._local.values = {}
        self.taken()

    def given(self):
        values = self._local.values
        for module_name, name in _PER_RANK_GLOBALS:
            module = sys.modules.get(module_name)
            if module is not None:
                values[module_name, name] = module.__dict__.get(name)

    def taken(self):
        values = self._local.values
        for module_name, name in _PER_RANK_GLOBALS:
            module = sys.modules.get(module_name)
            if module is not None and name in module.__dict__:
                module.__dict__[name] = values.get((module_name, name))


class _PerRankInstances(threading.local):
    """A ManagerMixin class's ``_instance_dict`` during a run: each thread's own ordered dict."""

    def __init__(self):
        self.own = collections.OrderedDict()

    def __getitem__(self, key):
        return self.own[key]

    def __setitem__(self, key, value):
        self.own[key] = value

    def __delitem__(self, key):
        del self.own[key]

    def __contains__(self, key):
        return key in self.own

    def __iter__(self):
        return iter(self.own)

    def __reversed__(self):
        return reversed(self.own)

    def __len__(self):
        return len(self.own)

    def __getattr__(self, name):
        return getattr(self.own, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls then(module) once the module named ``name`` has been imported (now, if it is)."""

    def __init__(self, name, then):
        self._name, self._then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self._name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, then = spec.loader, self._then
        exec_module = loader.exec_module

        def exec_then(module):
            exec_module(module)
            then(module)

        loader.exec_module = exec_then
        return spec


class ManagerInstances:
    """MMEngine's ManagerMixin classes keep their named instances in a class attribute: during a
    run each rank thread has its own (see ranks._torch_sim's docstring), whether mmengine is imported
    before the run or by the ranks."""

    MODULE = "mmengine.utils.manager"

    def __init__(self):
        self._saved = {}
        self._meta = None
        self._finder = None

    def install(self):
        module = sys.modules.get(self.MODULE)
        if module is not None:
            self._patch(module)
        else:
            self._finder = _AfterImport(self.MODULE, self._patch)
            sys.meta_path.insert(0, self._finder)

    def _patch(self, module):
        meta, original_init = module.ManagerMeta, module.ManagerMeta.__init__

        def init(cls, *args):
            original_init(cls, *args)
            cls._instance_dict = _PerRankInstances()

        self._meta = (meta, original_init)
        meta.__init__ = init
        pending = [module.ManagerMixin]
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            if "_instance_dict" in cls.__dict__:
                self._saved[cls] = cls.__dict__["_instance_dict"]
                cls._instance_dict = _PerRankInstances()

    def undo(self):
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        if self._meta is not None:
            meta, original_init = self._meta
            meta.__init__ = original_init
        for cls, instances in self._saved.items():
            cls._instance_dict = instances
        self._saved.clear()


class RankRandomness:
    """Each rank's own random generators (see ranks._torch_sim's docstring)."""

    def __init__(self, torch):
        self._generator = torch.default_generator
        self._initial = torch.Generator().get_state()  # torch's default seed
        self._local = threading.local()
        self._patched = []  # (module, name, original)
        self._dispatch(random, random._inst, "random", random.Random)
        numpy_random = sys.modules.get("numpy.random")
        if numpy_random is None:
            try:
                import numpy.random as numpy_random
            except ImportError:
                numpy_random = None
        if numpy_random is not None:
            self._dispatch(numpy_random, numpy_random.mtrand._rand, "numpy",
                           numpy_random.RandomState)

    def _dispatch(self, module, shared, kind, make):
        local = self._local
        for name in dir(module):
            original = getattr(module, name)
            # numpy.random.seed is a function of its own that seeds the shared RandomState.
            if getattr(original, "__self__", None) is not shared and name != "seed":
                continue

            def call(*args, _name=name, _kind=kind, _shared=shared, **kwargs):
                return getattr(getattr(local, _kind, _shared), _name)(*args, **kwargs)

            call.__name__ = call.__qualname__ = name
            call.__doc__ = original.__doc__
            self._patched.append((module, name, original))
            setattr(module, name, call)
        setattr(self, f"_make_{kind}", make)

    def enter_rank(self, rank):
        self._local.random = self._make_random(rank)
        if hasattr(self, "_make_numpy"):
            self._local.numpy = self._make_numpy(rank)
        self._generator.set_state(self._initial)

    def given(self):
        self._local.torch_state = self._generator.get_state()

    def taken(self):
        state = getattr(self._local, "torch_state", None)
        if state is not None:
            self._generator.set_state(state)

    def undo(self):
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)
        self._patched.clear()
