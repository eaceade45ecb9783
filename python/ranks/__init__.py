"""ranks: MMEngine's dist API for real runs (gloo, mpi, nccl) and for a deterministic simulator.

    import ranks.dist as dist      # mmengine.dist's functions
    import ranks.sim               # ranks.sim.run(fn, world_size=...) -> report

Under ``ranks sim -n N -- python3 script.py`` the first import of ranks runs the script as N
simulated ranks in this process (see ranks._script), prints the report and exits with its status.
"""

import os as _os

from ranks import _core
from ranks.errors import (BackendError, Deadlock, Error, InvalidArgument, Mismatch, RankFailure,
                          RendezvousError, Timeout, Unsupported)

__version__ = "0.1.0"

_core.set_package_directory(_os.path.dirname(_os.path.abspath(__file__)))

if _os.environ.get("RANKS_SIM_WORLD_SIZE") and not _core.simulating():
    from ranks import _script

    _script.run_simulated()
