"""How a real Python rank leaves on an uncaught exception: as ranks::main does for a C++ rank.

Python would print the traceback and exit 1 whatever happened, and then tear the runtime down,
which can wait for peers that are themselves stuck. Instead, once the traceback is printed, the
rank publishes its error as the job's first failure (when no other rank did first), or names the
first failure when it only saw another rank's (a lost peer, a timeout), and exits at once: 1 for
an error of its own, 75 for what it saw of another's. Launchers (`ranks run`, torchrun's
summary, srun) then blame the rank that failed first, not a survivor.
"""

import sys

from ranks import _core
from ranks.errors import RankFailure, Timeout

_installed = False


def _chain(error):
    """The exception and those it was raised from or while handling, outermost first."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _symptom(error):
    """Whether the error is what this rank saw of another rank's failure."""
    return any(isinstance(e, (RankFailure, Timeout)) for e in _chain(error))


def _hook(previous):
    def leave(kind, value, traceback):
        previous(kind, value, traceback)
        if not issubclass(kind, Exception) or not _core.is_initialized() or _core.simulating():
            return  # Ctrl-C, or no job to tell: Python's own exit
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed stream: nothing of it to keep
                pass
        _core.leave_after_error(f"{kind.__name__}: {value}", _symptom(value))
    return leave


def install():
    """After ranks.dist makes a real process group: uncaught errors leave as ranks::main's do.
    Once per process; a simulated run keeps Python's own hook (the simulator reports each rank),
    and a torch program on the backend `ranks` keeps torch's (its store is torch's, and torchrun
    reads its own error files)."""
    global _installed
    if _installed or _core.simulating():
        return
    _installed = True
    sys.excepthook = _hook(sys.excepthook)
