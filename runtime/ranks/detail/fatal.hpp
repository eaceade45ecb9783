#pragma once
// How a real rank leaves on an error it cannot return from: ranks::main's way out for an uncaught
// error, and the mpi watchdog's for a blocking call past its deadline (which no thread can
// interrupt), so that both read the same to a user and to the other ranks.

#include <exception>

namespace ranks::detail {

// Prints "ranks: error: <what>" to stderr; names the job's first failure when another rank
// published one, else publishes e as the first failure unless it is a RankFailure or Timeout
// (what a rank sees of another's failure, never a root cause); then _Exit(1), without the
// exit-time teardown: a backend's orderly shutdown (MPI_Finalize, closing a communicator) can
// wait for peers that are themselves stuck waiting for this rank.
[[noreturn]] void exit_on(const std::exception& e);

}  // namespace ranks::detail
