"""`ranks sim -n N -- python3 script.py`: the script, unchanged, as N simulated ranks.

``ranks sim`` starts the interpreter on ranks._simulate with RANKS_SIM_* variables set, which
runs the script's file from the top on every rank, as torchrun runs it once per process: each
rank in a fresh ``__main__`` module of its own (so that classes the script defines pickle and
unpickle on every rank). It prints the report as a C++ program under ``ranks sim`` would, and
ends the interpreter with the run's status. (A script started otherwise, with ``-m`` or ``-c``,
is taken over at its first ``import ranks`` instead: what it did before has run once already.)

A script that imports ranks.dist runs its ranks as fibers of one thread; any other (a
torch.distributed program) runs each rank on a thread of its own (``ranks._torch_sim``), since
torch keeps per-thread state that ranks must not share. RANKS_SIM_RANK_THREADS=1 or 0 chooses.
"""

import contextlib
import os
import re
import sys
# Imported here, on the interpreter's own thread state, before any rank runs: threading records
# the thread state that first imports it as the main thread's, and interpreter shutdown asserts
# that state is still alive. Imported first by a rank (the script's own imports run on every
# rank), it would record that rank's state, which ends with the run.
import threading  # noqa: F401
import types

from ranks import _core
from ranks.errors import InvalidArgument

# What a script written on ranks.dist imports (one on torch.distributed may import ranks.torch).
_RANKS_DIST_IMPORT = re.compile(
    rb"^\s*(import\s+ranks\.dist\b|from\s+ranks\.dist\s+import\b|from\s+ranks\s+import\s+.*\bdist\b)",
    re.MULTILINE)


def _rank_main(code, path, enter_rank=None):
    if enter_rank is not None:
        enter_rank()
    else:
        _core.await_own_init()  # a ranks.dist script is distributed from its own init on
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    _core.set_main_module(module)
    try:
        exec(code, module.__dict__)
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            raise


def _rank_threads_for(source):
    """Whether the script's ranks run on threads of their own (see above)."""
    asked = os.environ.get("RANKS_SIM_RANK_THREADS", "").strip()
    if asked in ("0", "1"):
        return asked == "1"
    if asked:
        raise InvalidArgument(f"environment variable RANKS_SIM_RANK_THREADS='{asked}' must be "
                              f"0 (fibers) or 1 (a thread per rank)")
    return _RANKS_DIST_IMPORT.search(source) is None


def run_simulated():
    path = sys.argv[0]
    if not path or path in ("-c", "-m"):
        raise SystemExit("ranks sim: a Python program must be a script file (python3 script.py)")
    with open(path, "rb") as source_file:
        source = source_file.read()
    code = compile(source, path, "exec")
    rank_threads = _rank_threads_for(source)
    from ranks import sim
    with contextlib.ExitStack() as stack:
        stack.enter_context(sim._exits_reported())
        enter_rank = None
        if rank_threads:
            from ranks import _torch_sim
            enter_rank = stack.enter_context(_torch_sim.simulated_torch())
        status = _core.run_script_simulated(lambda: _rank_main(code, path, enter_rank),
                                            rank_threads)
    sys.stdout.flush()
    raise SystemExit(status)
