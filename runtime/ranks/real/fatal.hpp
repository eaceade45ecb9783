#pragma once
// How a real rank leaves on an error it cannot return from: ranks::main's way out for an uncaught
// error, and the mpi watchdog's for a blocking call past its deadline (which no thread can
// interrupt), so that both read the same to a user and to the other ranks.

#include <exception>
#include <string>

namespace ranks::detail {

// Prints "ranks: error: <what>" to stderr; names the job's first failure when another rank
// published one, else publishes e as the first failure unless it is a RankFailure or Timeout
// (what a rank sees of another's failure, never a root cause); then _Exit(1), or
// _Exit(peer_failed_exit_status) for those, without the
// exit-time teardown: a backend's orderly shutdown (MPI_Finalize, closing a communicator) can
// wait for peers that are themselves stuck waiting for this rank.
[[noreturn]] void exit_on(const std::exception& e);

// The same way out for an error already printed (a Python rank's traceback): `symptom` says
// whether it is what a rank sees of another's failure (a RankFailure or Timeout).
[[noreturn]] void leave_after(const std::string& what, bool symptom);

// The exit status of a rank that stops because another failed (its RankFailure or Timeout, or
// another's published failure): launchers blame a rank that failed for its own reason first.
// 75 is sysexits' EX_TEMPFAIL, which no rank's own error exit uses.
inline constexpr int peer_failed_exit_status = 75;

}  // namespace ranks::detail
