#include "ranks/backends/mpi/watchdog.hpp"

#include "ranks/real/fatal.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

void Watch::on_deadline(Base::Clock::time_point now) {
  ranks::detail::exit_on(Timeout(timeout_text(
      comm_, op_, now - started(), timeout(),
      "a blocking MPI call can be neither interrupted nor cancelled, so this process exits (the "
      "launcher then stops the other ranks)")));
}

}  // namespace ranks::backends::mpi
