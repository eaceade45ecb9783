"""ranks: MMEngine's dist API for real runs (gloo, mpi, nccl) and for a deterministic simulator.

    import ranks.dist as dist      # mmengine.dist's functions
    import ranks.sim               # ranks.sim.run(fn, world_size=...) -> report

Under ``ranks sim -n N -- python3 script.py`` the script runs as N simulated ranks in this
process (see ranks._script), and the report is printed; a program started with ``-m`` is taken
over at its first import of ranks.
"""

import os as _os
import sys as _sys

from ranks import _core
from ranks.errors import (BackendError, Deadlock, Error, InvalidArgument, Mismatch, RankFailure,
                          RendezvousError, Timeout, Unsupported)

__version__ = "0.1.0"

_core.set_package_directory(_os.path.dirname(_os.path.abspath(__file__)))


def _simulate_script_if_asked():
    """Under ``ranks sim``, the first import of ranks by the script runs it simulated (and ends
    the interpreter). Not while torch is being imported: torch 2.5+ imports ranks.torch from its
    own import (the "torch.backends" entry point), and the script must not run inside that; its
    own ``import ranks.dist`` comes later."""
    if not _os.environ.get("RANKS_SIM_WORLD_SIZE") or _core.simulating():
        return
    if _os.environ.get("RANKS_SIM_ENTRY"):  # started on ranks._simulate, which takes over
        return
    torch = _sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "__spec__", None), "_initializing", False):
        return
    from ranks import _script

    _script.run_simulated()


_simulate_script_if_asked()
