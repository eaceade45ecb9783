"""ranks' errors, one class per kind of the C++ library's (same message text).

Each also derives from the builtin a Python program would catch for it: an InvalidArgument is a
ValueError, an Unsupported a NotImplementedError, a Timeout a TimeoutError's cousin (torch raises
RuntimeError for timeouts; every class here is a RuntimeError through Error).
"""


class Error(RuntimeError):
    """Any error of ranks."""

    kind = "error"


class InvalidArgument(Error, ValueError):
    kind = "invalid_argument"


class Unsupported(Error, NotImplementedError):
    kind = "unsupported"


class Mismatch(Error):
    kind = "mismatch"


class Timeout(Error):
    kind = "timeout"


class Deadlock(Error):
    kind = "deadlock"


class RankFailure(Error):
    kind = "rank_failure"


class RendezvousError(Error):
    kind = "rendezvous"


class BackendError(Error):
    kind = "backend"


class Unwinding(BaseException):
    """A simulated rank being unwound (it crashed, or the run ended under it).

    A BaseException, so that ``except Exception:`` in a rank body cannot swallow it: a crashed
    process would be gone, and the simulator reports the rank as crashed.
    """


__all__ = ["Error", "InvalidArgument", "Unsupported", "Mismatch", "Timeout", "Deadlock",
           "RankFailure", "RendezvousError", "BackendError"]
