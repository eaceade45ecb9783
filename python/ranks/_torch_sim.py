"""torch.distributed programs, unchanged, as simulated ranks.

Each simulated rank runs on an OS thread of its own (``rank_threads``), one at a time. While a
run goes on, torch.distributed behaves on every rank thread as it does in one process of a real
job launched by torchrun:

- ``init_process_group`` with ``env://``, ``tcp://`` or ``file://`` rendezvouses through the
  job's store, which every rank of the run sees; the rank and world size are the simulated
  rank's (a script that asks for others is told so);
- a ``TCPStore`` or ``FileStore`` the script makes is one every rank sees (ranks that name the
  same host and port, or file, share it), whose waits let the other ranks run;
- the process group torch builds for ``"gloo"`` (and for a bare ``init_process_group()`` on a
  CPU-only torch) is a ``ranks.torch.ProcessGroup`` on the rank's simulated world or sub-group,
  so its collectives are matched, priced and diagnosed by the simulator; ``get_backend()`` still
  says ``"gloo"``;
- torch's process-group registry and c10d's world (default group, group names and counts) are
  the rank's own (torch's thread-isolation mode and a per-thread world);
- ``os.environ`` shows each rank the variables torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE,
  LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT), and what a rank writes there is its
  own; the process's real environment (what child processes and C code see) is not changed;
- each rank has its own random generators: torch's default generator (torch keeps one per
  process: it is saved and restored around every turn), and the generators behind ``random``'s
  and ``numpy.random``'s module functions (each rank's calls go to its own). Every rank starts
  with torch's default seed, as every process of a real job does; ``random`` and ``numpy.random``
  are seeded from the rank (a real process seeds them from the OS, so no script can count on
  their values);
- the module globals that libraries keep per process and the script cannot reach are each
  rank's own: MMEngine's local process group (``mmengine.dist.utils._LOCAL_PROCESS_GROUP``), and
  the instances of MMEngine's ``ManagerMixin`` classes (MessageHub, MMLogger, Visualizer: each
  rank's ``get_instance`` and ``get_current_instance`` see the ones it made);
- torch runs one intra-op thread per rank unless OMP_NUM_THREADS says otherwise, as torchrun
  sets for several processes per node.
"""

import contextlib
import datetime
import os
import sys
import threading
import types
import urllib.parse

from ranks import _core
from ranks._rank_state import (ManagerInstances, RankEnviron, RankGlobals, RankRandomness,
                               launcher_variables)
from ranks.errors import InvalidArgument, Timeout

# Virtual time a store wait lets pass before it looks again: other ranks run meanwhile.
_STORE_POLL_SECONDS = 1e-6


def _job_store_class(dist):
    class JobStore(dist.Store):
        """The job's store, one for every rank of the run (torchrun's agent store or the
        MASTER_ADDR TCPStore in a real job). A get or wait for keys not set yet lets the other
        ranks run on the virtual clock until they are set or the store's timeout passes."""

        def __init__(self):
            super().__init__()
            self._data = {}

        @staticmethod
        def _bytes(value):
            return value.encode() if isinstance(value, str) else bytes(value)

        def _wait_for(self, keys, timeout=None):
            if timeout is None or not isinstance(timeout, datetime.timedelta):
                timeout = self.timeout
            limit = timeout.total_seconds() if timeout.total_seconds() > 0 else float("inf")
            waited = 0.0
            while not all(key in self._data for key in keys):
                if waited >= limit:
                    missing = [key for key in keys if key not in self._data]
                    raise Timeout(f"the job's store: timeout after {timeout} waiting for "
                                  f"key(s) {missing} on rank {_core.get_rank(None)}")
                _core.sleep(_STORE_POLL_SECONDS)
                waited += _STORE_POLL_SECONDS

        def set(self, key, value):
            self._data[key] = self._bytes(value)

        def get(self, key):
            self._wait_for([key])
            return self._data[key]

        def add(self, key, amount):
            value = int(self._data.get(key, b"0")) + int(amount)
            self._data[key] = str(value).encode()
            return value

        def append(self, key, value):
            self._data[key] = self._data.get(key, b"") + self._bytes(value)

        def compare_set(self, key, expected, desired):
            current = self._data.get(key)
            expected = self._bytes(expected)
            if (current is None and expected == b"") or current == expected:
                self._data[key] = self._bytes(desired)
                return self._data[key]
            return expected if current is None else current

        def check(self, keys):
            return all(key in self._data for key in keys)

        def wait(self, keys, timeout=None):
            self._wait_for(list(keys), timeout)

        def multi_get(self, keys):
            self._wait_for(list(keys))
            return [self._data[key] for key in keys]

        def multi_set(self, keys, values):
            for key, value in zip(keys, values):
                self.set(key, value)

        def getNumKeys(self):  # noqa: N802 (torch's name)
            return len(self._data)

        def deleteKey(self, key):  # noqa: N802 (torch's name)
            return self._data.pop(key, None) is not None

        def clone(self):
            return self

        def has_extended_api(self):
            return True

    return JobStore


def _script_store_classes(job_store):
    """``TCPStore`` and ``FileStore`` during a run: a store the script makes itself is one every
    rank sees, as a real one is between processes (all ranks that name the same host and port, or
    the same file, share it), and its waits let the other ranks run. A real TCPStore's master
    would wait for its workers while holding the rank's turn, and a real FileStore's reader poll
    the file in real time."""

    def shared(name, key_of):
        instances = {}

        class Shared(job_store):
            def __new__(cls, *args, **kwargs):
                key = key_of(*args, **kwargs)
                store = instances.get(key)
                if store is None:
                    store = job_store.__new__(cls)
                    store._made = False
                    instances[key] = store
                return store

            def __init__(self, *args, **kwargs):
                if self._made:
                    return
                job_store.__init__(self)
                self._made = True
                self._key = key_of(*args, **kwargs)

        Shared.__name__ = Shared.__qualname__ = name
        return Shared

    def tcp_key(host_name, port=None, *args, **kwargs):  # noqa: ARG001
        return (host_name, kwargs.get("port", port))

    def file_key(file_name, *args, **kwargs):  # noqa: ARG001
        return os.path.abspath(file_name)

    tcp = shared("TCPStore", tcp_key)
    tcp.host = property(lambda self: self._key[0])
    tcp.port = property(lambda self: self._key[1])
    tcp.libuvBackend = property(lambda self: False)
    file = shared("FileStore", file_key)
    file.path = property(lambda self: self._key)
    return tcp, file


def _thread_worlds(c10d):
    """c10d's ``_world`` during a run: each thread's own c10d state (default group, names,
    ranks, tags, group count), as one process of a real job has it; a rank thread's starts
    empty. A threading.local, so that c10d's every look at it is a plain attribute read."""

    class ThreadWorld(threading.local, c10d._World):
        def __init__(self):
            c10d._World.__init__(self)
            self._own = {"pg_map": {}, "pg_names": {}, "pg_group_ranks": {},
                         "pg_backend_config": {}, "tags_to_pg": {}, "pg_to_tag": {}}
            self._count = 0

        pg_map = property(lambda self: self._own["pg_map"])
        pg_names = property(lambda self: self._own["pg_names"])
        pg_group_ranks = property(lambda self: self._own["pg_group_ranks"])
        pg_backend_config = property(lambda self: self._own["pg_backend_config"])
        tags_to_pg = property(lambda self: self._own["tags_to_pg"])
        pg_to_tag = property(lambda self: self._own["pg_to_tag"])

        @property
        def group_count(self):
            return self._count

        @group_count.setter
        def group_count(self, value):
            self._count = value

    return ThreadWorld()


def _simulated_gloo_class(ranks_torch):
    class SimulatedGloo(ranks_torch.ProcessGroup):
        """What torch builds for "gloo" while ranks are simulated, built as torch builds
        ProcessGroupGloo: its members arrive in ``options`` after construction, and torch then
        calls _set_sequence_number_for_group, where it joins the simulated group."""

        def __init__(self, store, rank, size, timeout=None, *args, **kwargs):  # noqa: ARG002
            super().__init__(None, rank, size)
            _core.program_asks_for_backend("gloo")  # the run's rules, unless --backend chose
            self.options = types.SimpleNamespace(global_ranks_in_group=[], group_name="",
                                                 _timeout=timeout)

        @property
        def group_name(self):
            return self.options.group_name

        def _set_sequence_number_for_group(self):
            world = _core.get_world_size(None)
            members = list(self.options.global_ranks_in_group) or list(range(self.size()))
            if len(members) != self.size():
                raise InvalidArgument(f"torch asked for a group of {self.size()} ranks with "
                                      f"members {members}")
            if members == list(range(world)):
                self._group = None
            else:
                self._group = _core.new_group_of_members(members, str(self.options.group_name),
                                                         None)

    return SimulatedGloo


def _rendezvous_handler(store):
    def rendezvous(url, timeout=None, **kwargs):  # noqa: ARG001
        rank, world = _core.get_rank(None), _core.get_world_size(None)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        asked_rank = int(query["rank"][0]) if "rank" in query else rank
        asked_world = int(query["world_size"][0]) if "world_size" in query else world
        if asked_world != world or asked_rank != rank:
            raise InvalidArgument(
                f"init_process_group on simulated rank {rank} of {world} asks for rank "
                f"{asked_rank} of a world of {asked_world} ({url}): under ranks sim each rank "
                f"is what torchrun would make it (ranks sim -n sets the world size; RANK, "
                f"LOCAL_RANK and WORLD_SIZE are set for every rank)")
        yield (store, rank, world)
    return rendezvous


class _TorchSimulation:
    """The patches of one run, and their undoing."""

    def __init__(self):
        import torch
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        from ranks import torch as ranks_torch

        self._torch, self._c10d = torch, c10d
        self._rendezvous = sys.modules["torch.distributed.rendezvous"]
        self._dist = dist
        job_store = _job_store_class(dist)
        self._store = job_store()
        self._script_stores = _script_store_classes(job_store)
        self._worlds = _thread_worlds(c10d)
        self._environ = RankEnviron(os.environ)
        self._gloo = _simulated_gloo_class(ranks_torch)
        self._saved = {}

    def __enter__(self):
        c10d, rendezvous = self._c10d, self._rendezvous
        self._saved = {
            "TCPStore": self._dist.TCPStore, "FileStore": self._dist.FileStore,
            "world": c10d._world, "gloo": c10d.ProcessGroupGloo,
            "handlers": dict(rendezvous._rendezvous_handlers), "environ": os.environ,
            "excepthook": sys.excepthook, "threads": self._torch.get_num_threads(),
        }
        self._torch._C._distributed_c10d._set_thread_isolation_mode(True)
        c10d._world = self._worlds
        self._dist.TCPStore, self._dist.FileStore = self._script_stores
        self._managers = ManagerInstances()
        self._managers.install()
        c10d.ProcessGroupGloo = self._gloo
        handler = _rendezvous_handler(self._store)
        for scheme in ("env", "tcp", "file"):
            rendezvous._rendezvous_handlers[scheme] = handler
        os.environ = self._environ
        self._saved["torch_rng"] = self._torch.default_generator.get_state()
        self._randomness = RankRandomness(self._torch)
        self._globals = RankGlobals()
        randomness, module_globals = self._randomness, self._globals

        def given():
            randomness.given()
            module_globals.given()

        def taken():
            randomness.taken()
            module_globals.taken()

        _core.set_turn_callbacks(given, taken)
        if "OMP_NUM_THREADS" not in self._saved["environ"]:
            self._torch.set_num_threads(1)
        return self

    def enter_rank(self):
        self._environ.enter_rank(launcher_variables())
        self._randomness.enter_rank(_core.get_rank(None))
        self._globals.enter_rank()

    def __exit__(self, *exc):
        c10d, saved = self._c10d, self._saved
        _core.set_turn_callbacks(None, None)
        self._managers.undo()
        self._randomness.undo()
        self._torch.default_generator.set_state(saved["torch_rng"])
        os.environ = saved["environ"]
        self._dist.TCPStore, self._dist.FileStore = saved["TCPStore"], saved["FileStore"]
        self._rendezvous._rendezvous_handlers.clear()
        self._rendezvous._rendezvous_handlers.update(saved["handlers"])
        c10d.ProcessGroupGloo = saved["gloo"]
        c10d._world = saved["world"]
        self._torch._C._distributed_c10d._set_thread_isolation_mode(False)
        sys.excepthook = saved["excepthook"]  # init_process_group wraps it on every rank
        self._torch.set_num_threads(saved["threads"])
        return False


@contextlib.contextmanager
def simulated_torch():
    """torch.distributed as each rank of a real job sees it, for a run of rank threads; yields
    the function each rank calls first on its thread (None when torch is not installed)."""
    try:
        import torch.distributed  # noqa: F401
    except ImportError:
        yield None
        return
    with _TorchSimulation() as simulation:
        yield simulation.enter_rank
