"""`ranks sim -n N -- python3 script.py`: the script, unchanged, as N simulated ranks.

``ranks sim`` starts the interpreter with RANKS_SIM_* variables set. When the script imports
ranks, this runs the script's file again from the top on every rank, each rank in a fresh
``__main__`` module of its own (so that classes the script defines pickle and unpickle on every
rank), prints the report as a C++ program under ``ranks sim`` would, and ends the interpreter
with the run's status. What the script did before its first ``import ranks`` has run once
already, outside the simulation.
"""

import sys
# Imported here, on the interpreter's own thread state, before any rank runs: threading records
# the thread state that first imports it as the main thread's, and interpreter shutdown asserts
# that state is still alive. Imported first by a rank (the script's own imports run on every
# rank), it would record that rank's state, which ends with the run.
import threading  # noqa: F401
import types

from ranks import _core


def _rank_main(code, path):
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    _core.set_main_module(module)
    try:
        exec(code, module.__dict__)
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            raise


def run_simulated():
    path = sys.argv[0]
    if not path or path == "-c":
        raise SystemExit("ranks sim: a Python program must be a script file (python3 script.py)")
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec")
    from ranks import sim
    with sim._exits_reported():
        status = _core.run_script_simulated(lambda: _rank_main(code, path))
    sys.stdout.flush()
    raise SystemExit(status)
